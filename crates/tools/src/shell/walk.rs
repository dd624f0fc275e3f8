//! Walks brush's syntax tree of a command line and collects every simple command that would run,
//! recursing into compound commands, substitutions and what wrappers run.

use super::redirect::{is_descriptor, is_harmless_target, redirection_token, render_target};
use super::words::{self, Expanded};
use super::wrappers::{self, Peel};
use super::{builtins, depth};
use super::{Analysis, Command, Layer, Origin, Redirect, Unknown, UnknownReason, Word, WordKind};
use brush_parser::ast::{self, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};
use brush_parser::Parser;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How many times a command line may nest another (`$(…)`, `bash -c`) before the analysis stops.
const MAX_DEPTH: usize = 12;

/// How deeply brackets and compound commands may nest in one text. The parser recurses on each
/// level, so this keeps it far from the end of a 2 MiB thread stack.
const MAX_NESTING: usize = 40;

pub(super) fn analyze(command: &str) -> Analysis {
    let mut walker = Walker::default();
    walker.source(command, 0);
    walker.out
}

#[derive(Default)]
struct Walker {
    out: Analysis,
}

/// The pieces of one simple command as they are gathered.
#[derive(Default)]
struct Parts {
    assignments: Vec<Word>,
    words: Vec<Word>,
    redirections: Vec<Word>,
    redirect: Option<Redirect>,
}

impl Walker {
    fn unknown(&mut self, text: impl Into<String>, reason: UnknownReason) {
        self.out.unknown.push(Unknown {
            text: text.into(),
            reason,
        });
    }

    /// Parses and walks one piece of shell text.
    fn source(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH || depth::nesting(text) > MAX_NESTING {
            self.unknown(text, UnknownReason::TooDeep);
            return;
        }
        let options = words::parser_options();
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            Parser::new(std::io::Cursor::new(text.as_bytes()), &options).parse_program()
        }));
        match parsed {
            Ok(Ok(program)) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Ok(Err(error)) => self.unknown(text, UnknownReason::Syntax(error.to_string())),
            Err(_) => self.unknown(text, UnknownReason::Syntax("the parser failed".into())),
        }
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
                self.pipeline(pipeline, depth);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize) {
        let start = self.out.commands.len();
        match command {
            ast::Command::Simple(simple) => self.simple(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                self.compound_redirects(redirects.as_ref(), start, depth);
            }
            ast::Command::Function(function) => {
                self.unknown(
                    function.fname.value.clone(),
                    UnknownReason::FunctionDefinition,
                );
                self.compound(&function.body.0, depth);
                self.compound_redirects(function.body.1.as_ref(), start, depth);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                let mut words = vec![Word::fixed("[[")];
                self.extended_test(&test.expr, &mut words, depth);
                words.push(Word::fixed("]]"));
                self.push(
                    Parts {
                        words,
                        ..Parts::default()
                    },
                    Layer::Program,
                    Origin::Shell,
                    format!("[[ {} ]]", test.expr),
                );
                self.compound_redirects(redirects.as_ref(), start, depth);
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(arithmetic) => self.arithmetic(&arithmetic.expr.value),
            C::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value);
                }
                self.list(&clause.body.list, depth);
            }
            C::BraceGroup(group) => self.list(&group.list, depth),
            C::Subshell(subshell) => self.list(&subshell.list, depth),
            C::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(&value.value, depth);
                }
                self.list(&clause.body.list, depth);
            }
            C::CaseClause(clause) => {
                self.word(&clause.value.value, depth);
                for case in &clause.cases {
                    for pattern in &case.patterns {
                        self.word(&pattern.value, depth);
                    }
                    if let Some(body) = &case.cmd {
                        self.list(body, depth);
                    }
                }
            }
            C::IfClause(clause) => {
                self.list(&clause.condition, depth);
                self.list(&clause.then, depth);
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(condition, depth);
                    }
                    self.list(&branch.body, depth);
                }
            }
            C::WhileClause(clause) | C::UntilClause(clause) => {
                self.list(&clause.0, depth);
                self.list(&clause.1.list, depth);
            }
            C::Coprocess(coprocess) => self.command(&coprocess.body, depth),
        }
    }

    /// A redirection after a compound command applies to every command inside it.
    fn compound_redirects(
        &mut self,
        redirects: Option<&ast::RedirectList>,
        start: usize,
        depth: usize,
    ) {
        let Some(redirects) = redirects else {
            return;
        };
        let mut parts = Parts::default();
        for redirect in &redirects.0 {
            self.redirection(redirect, &mut parts, depth);
        }
        if parts.redirect != Some(Redirect::File) {
            return;
        }
        if self.out.commands.len() == start {
            let text = super::render::line(&[], &parts.redirections);
            self.push(parts, Layer::Program, Origin::Shell, text);
            return;
        }
        for command in &mut self.out.commands[start..] {
            command.redirect = Redirect::File;
            command
                .redirections
                .extend(parts.redirections.iter().cloned());
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, words: &mut Vec<Word>, depth: usize) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(left, right) | E::Or(left, right) => {
                self.extended_test(left, words, depth);
                self.extended_test(right, words, depth);
            }
            E::Not(inner) | E::Parenthesized(inner) => self.extended_test(inner, words, depth),
            E::UnaryTest(predicate, operand) => {
                words.push(Word::fixed(predicate.to_string()));
                let word = self.word(&operand.value, depth);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    self.subscripts(&word);
                }
                words.push(word);
            }
            E::BinaryTest(predicate, left, right) => {
                use ast::BinaryPredicate as B;
                let left_word = self.word(&left.value, depth);
                let right_word = self.word(&right.value, depth);
                let arithmetic = matches!(
                    predicate,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    // `[[ $x -eq 1 ]]` evaluates the value of x as arithmetic.
                    for word in [&left_word, &right_word] {
                        self.arithmetic(&word.text);
                    }
                }
                words.extend([left_word, Word::fixed(predicate.to_string()), right_word]);
            }
        }
    }

    /// Arithmetic that is not plain numbers can run commands (see `words::arithmetic`).
    fn arithmetic(&mut self, expr: &str) {
        let mut expanded = Expanded::default();
        words::arithmetic(&mut expanded, expr);
        self.absorb(expanded, expr, 0);
    }

    /// Expands one word: its substitutions are analysed and its risks recorded.
    fn word(&mut self, raw: &str, depth: usize) -> Word {
        let expanded = words::expand(raw);
        let word = expanded.word(raw);
        self.absorb(expanded, raw, depth);
        word
    }

    fn absorb(&mut self, expanded: Expanded, raw: &str, depth: usize) {
        for risk in expanded.risks {
            self.unknown(raw, UnknownReason::Expansion(risk));
        }
        for command in expanded.commands {
            self.source(&command, depth + 1);
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        let mut parts = Parts::default();
        for item in simple.prefix.iter().flat_map(|p| &p.0) {
            self.item(item, &mut parts, Position::Prefix, depth);
        }
        if let Some(name) = &simple.word_or_name {
            let word = self.word(&name.value, depth);
            parts.words.push(word);
        }
        for item in simple.suffix.iter().flat_map(|s| &s.0) {
            self.item(item, &mut parts, Position::Suffix, depth);
        }
        self.finish(parts, Origin::Shell, simple.to_string(), depth);
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        parts: &mut Parts,
        position: Position,
        depth: usize,
    ) {
        use ast::CommandPrefixOrSuffixItem as Item;
        match item {
            Item::IoRedirect(redirect) => self.redirection(redirect, parts, depth),
            Item::Word(word) => {
                let word = self.word(&word.value, depth);
                parts.words.push(word);
            }
            Item::AssignmentWord(assignment, word) => {
                let word = self.assignment(assignment, &word.value, depth);
                match position {
                    Position::Prefix => parts.assignments.push(word),
                    // `export A=1`: an argument that looks like an assignment.
                    Position::Suffix => parts.words.push(word),
                }
            }
            Item::ProcessSubstitution(_, subshell) => {
                self.list(&subshell.list, depth);
                // It becomes a `/dev/fd/N` path.
                parts.words.push(Word {
                    text: item.to_string(),
                    kind: WordKind::DynamicOperand,
                });
            }
        }
    }

    fn assignment(&mut self, assignment: &ast::Assignment, raw: &str, depth: usize) -> Word {
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name {
            let mut expanded = Expanded::default();
            words::subscript(&mut expanded, index);
            self.absorb(expanded, raw, depth);
        }
        match &assignment.value {
            ast::AssignmentValue::Scalar(_) => self.word(raw, depth),
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        let mut expanded = Expanded::default();
                        words::subscript(&mut expanded, &key.value);
                        self.absorb(expanded, raw, depth);
                    }
                    self.word(&value.value, depth);
                }
                Word {
                    text: raw.to_string(),
                    kind: WordKind::DynamicOperand,
                }
            }
        }
    }

    fn redirection(&mut self, redirect: &IoRedirect, parts: &mut Parts, depth: usize) {
        let fd = |fd: &Option<i32>| fd.map(|n| n.to_string()).unwrap_or_default();
        let (token, writes) = match redirect {
            IoRedirect::File(number, kind, target) => {
                let target_word = match target {
                    IoFileRedirectTarget::Filename(word)
                    | IoFileRedirectTarget::Duplicate(word) => self.word(&word.value, depth),
                    IoFileRedirectTarget::Fd(n) => Word::fixed(n.to_string()),
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.list(&subshell.list, depth);
                        Word {
                            text: target.to_string(),
                            kind: WordKind::DynamicOperand,
                        }
                    }
                };
                let duplicates = matches!(
                    kind,
                    IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput
                );
                let writes = match kind {
                    IoFileRedirectKind::Read | IoFileRedirectKind::DuplicateInput => false,
                    IoFileRedirectKind::DuplicateOutput => match target {
                        IoFileRedirectTarget::Fd(_)
                        | IoFileRedirectTarget::ProcessSubstitution(..) => false,
                        // `>&file` is bash's `&>file`.
                        _ => !is_descriptor(&target_word),
                    },
                    IoFileRedirectKind::Write
                    | IoFileRedirectKind::Append
                    | IoFileRedirectKind::ReadAndWrite
                    | IoFileRedirectKind::Clobber => !is_harmless_target(&target_word),
                };
                let target_text = render_target(&target_word);
                let token = match duplicates {
                    true => format!("{}{kind}{target_text}", fd(number)),
                    false => format!("{}{kind} {target_text}", fd(number)),
                };
                (redirection_token(token, &target_word), writes)
            }
            IoRedirect::OutputAndError(target, append) => {
                let target_word = self.word(&target.value, depth);
                let op = if *append { "&>>" } else { "&>" };
                let token = format!("{op} {}", render_target(&target_word));
                (
                    redirection_token(token, &target_word),
                    !is_harmless_target(&target_word),
                )
            }
            IoRedirect::HereDocument(number, doc) => {
                if doc.requires_expansion {
                    let expanded = words::expand_heredoc(&doc.doc.value);
                    self.absorb(expanded, &doc.doc.value, depth);
                }
                (
                    Word::fixed(format!("{}<<{}", fd(number), doc.here_end.value)),
                    false,
                )
            }
            IoRedirect::HereString(number, word) => {
                let word = self.word(&word.value, depth);
                let token = format!("{}<<< {}", fd(number), render_target(&word));
                (redirection_token(token, &word), false)
            }
        };
        parts.redirections.push(token);
        if writes {
            parts.redirect = Some(Redirect::File);
        } else if parts.redirect.is_none() {
            parts.redirect = Some(Redirect::None);
        }
    }

    /// Judges a gathered simple command: what it runs, and what that runs in turn.
    fn finish(&mut self, parts: Parts, origin: Origin, text: String, depth: usize) {
        for assignment in &parts.assignments {
            self.check_assignment(assignment, &text);
        }
        let Some(first) = parts.words.first() else {
            // A bare assignment or redirection: nothing runs, but it may write a file.
            if !parts.assignments.is_empty() || parts.redirect == Some(Redirect::File) {
                self.push(parts, Layer::Program, origin, text);
            }
            return;
        };
        if first.kind != WordKind::Static {
            self.unknown(text, UnknownReason::DynamicCommandName);
            return;
        }
        let name = first
            .text
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        self.check_builtin(&name, &parts, &text);
        let peel = wrappers::peel(&name, &parts.words[1..]);
        let layer = match peel {
            Peel::NotWrapper | Peel::NoCommand => Layer::Program,
            Peel::Runs(_) | Peel::Script(_) | Peel::Unknown(_) => Layer::Wrapper,
        };
        if name == "exec" && matches!(peel, Peel::NoCommand) && !parts.redirections.is_empty() {
            self.unknown(text.clone(), UnknownReason::ExecRedirection);
        }
        let redirect = parts.redirect;
        let redirections = parts.redirections.clone();
        self.push(parts, layer, origin, text.clone());
        match peel {
            Peel::NotWrapper | Peel::NoCommand => {}
            Peel::Runs(inners) => {
                for inner in inners {
                    let text = super::render::line(&inner.words, &[]);
                    let parts = Parts {
                        assignments: inner.assignments,
                        words: inner.words,
                        redirections: redirections.clone(),
                        redirect,
                    };
                    self.finish(parts, inner.origin, text, depth);
                }
            }
            Peel::Script(script) => {
                let start = self.out.commands.len();
                self.source(&script, depth + 1);
                if redirect == Some(Redirect::File) {
                    for command in &mut self.out.commands[start..] {
                        command.redirect = Redirect::File;
                    }
                }
            }
            Peel::Unknown(reason) => self.unknown(text, reason),
        }
    }

    fn check_assignment(&mut self, assignment: &Word, text: &str) {
        if let Some(reason) = builtins::assignment_risk(assignment) {
            self.unknown(text, reason);
        }
    }

    fn check_builtin(&mut self, name: &str, parts: &Parts, text: &str) {
        for reason in builtins::risks(name, &parts.words[1..]) {
            self.unknown(text, reason);
        }
    }

    fn subscripts(&mut self, word: &Word) {
        if let Some(reason) = builtins::subscript_risk(word) {
            self.unknown(word.text.clone(), reason);
        }
    }

    fn push(&mut self, parts: Parts, layer: Layer, origin: Origin, text: String) {
        self.out.commands.push(Command {
            assignments: parts.assignments,
            words: parts.words,
            redirections: parts.redirections,
            redirect: parts.redirect.unwrap_or(Redirect::None),
            layer,
            origin,
            text,
        });
    }
}

/// Where an item of a simple command stands relative to its name.
#[derive(Clone, Copy)]
enum Position {
    Prefix,
    Suffix,
}
