//! Claude Code Bash rule patterns (`Bash(git status)`, `Bash(npm run test:*)`, `Bash(ls*)`)
//! matched against analysed commands, word by word after quote removal.
//!
//! A pattern is itself read as a command, so `Bash(cat a >b.txt)` and `Bash("cat" a > b.txt)`
//! mean the same. Restricting (deny and ask rules) is generous: any spelling of the program
//! matches (`/bin/rm` is `rm`), leading assignments are looked past, and a word that expands at
//! run time matches whatever the pattern says from there on. Granting (allow rules) is strict:
//! an expanding word matches only the same text in the pattern, and a prefix pattern never grants
//! a command that writes a file through a redirection.

use super::{analyze, render, Command, Origin, Redirect, Word, WordKind};

/// How a Bash specifier compares with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternKind {
    /// `Bash(git status)`: the command exactly.
    Exact,
    /// `Bash(npm run test:*)` or `Bash(npm run test *)`: these words, then anything or nothing.
    WordPrefix,
    /// `Bash(ls*)`: a plain text prefix (matches `lsof` too), as Claude Code reads it.
    TextPrefix,
}

/// Whether a rule is being asked to grant a command or to restrict it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An allow rule: must match exactly what will run.
    Grant,
    /// A deny or ask rule: matches every command that could be what the pattern names.
    Restrict,
}

/// A Bash rule's specifier, ready to match commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    kind: PatternKind,
    /// The specifier as written, trimmed (without `:*` or `*`).
    text: String,
    /// The specifier as tokens, read the way commands are.
    tokens: Vec<Token>,
}

impl Pattern {
    /// A pattern of `kind` from the specifier text (without its `:*` or `*`).
    pub fn new(kind: PatternKind, spec: &str) -> Pattern {
        let text = spec.trim().to_string();
        let tokens = tokens_of(&text);
        Pattern { kind, text, tokens }
    }

    /// How the pattern compares.
    pub fn kind(&self) -> PatternKind {
        self.kind
    }

    /// The specifier as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern matches one analysed command.
    pub fn matches(&self, command: &Command, purpose: Purpose) -> bool {
        if purpose == Purpose::Grant
            && command.redirect == Redirect::File
            && self.kind != PatternKind::Exact
        {
            // `Bash(cat:*)` grants reading, not `cat a > important-file`.
            return false;
        }
        let patterns = match purpose {
            Purpose::Grant => vec![self.tokens.clone()],
            Purpose::Restrict => {
                let mut variants = vec![self.tokens.clone()];
                variants.extend(with_basename(&self.tokens, self.assignment_count()));
                variants
            }
        };
        candidates(command, purpose).iter().any(|candidate| {
            patterns
                .iter()
                .any(|pattern| self.compare(pattern, candidate, purpose))
        })
    }

    /// Whether the pattern matches a whole command line as written (only used to restrict, so
    /// that a rule written for a whole compound line still holds).
    pub fn matches_text(&self, text: &str) -> bool {
        let text = text.trim();
        match self.kind {
            PatternKind::Exact => text == self.text,
            PatternKind::WordPrefix => text
                .strip_prefix(self.text.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace)),
            PatternKind::TextPrefix => text.starts_with(self.text.as_str()),
        }
    }

    fn assignment_count(&self) -> usize {
        self.tokens
            .iter()
            .take_while(|t| matches!(t, Token::Word(w) if super::wrappers::is_assignment(w)))
            .count()
    }

    fn compare(&self, pattern: &[Token], command: &[Token], purpose: Purpose) -> bool {
        match self.kind {
            PatternKind::Exact | PatternKind::WordPrefix => {
                for (i, want) in pattern.iter().enumerate() {
                    let Some(token) = command.get(i) else {
                        return false;
                    };
                    if std::mem::discriminant(token) != std::mem::discriminant(want) {
                        return false;
                    }
                    let (word, want) = (token.word(), want.word());
                    match (word.kind, purpose) {
                        (WordKind::Static, _) => {
                            if want.kind != WordKind::Static || word.text != want.text {
                                return false;
                            }
                        }
                        // It may expand to what the pattern says, and to more words after it.
                        (WordKind::Dynamic | WordKind::DynamicOperand, Purpose::Restrict) => {
                            return true
                        }
                        (WordKind::Dynamic | WordKind::DynamicOperand, Purpose::Grant) => {
                            if word.text != want.text {
                                return false;
                            }
                        }
                    }
                }
                let extra = &command[pattern.len().min(command.len())..];
                match (self.kind, purpose) {
                    (PatternKind::WordPrefix, _) => true,
                    (PatternKind::Exact, Purpose::Grant) => extra.is_empty(),
                    // An unquoted expansion may expand to nothing at all.
                    (PatternKind::Exact, Purpose::Restrict) => {
                        extra.iter().all(|t| t.word().kind == WordKind::Dynamic)
                    }
                    (PatternKind::TextPrefix, _) => false,
                }
            }
            PatternKind::TextPrefix => {
                let prefix = line_of(pattern);
                let dynamic_at = command
                    .iter()
                    .position(|t| t.word().kind != WordKind::Static);
                match (dynamic_at, purpose) {
                    (Some(at), Purpose::Restrict) => {
                        let mut fixed = line_of(&command[..at]);
                        if at > 0 {
                            fixed.push(' ');
                        }
                        fixed.starts_with(&prefix) || prefix.starts_with(&fixed)
                    }
                    (None, _) | (Some(_), Purpose::Grant) => {
                        let line = line_of(command);
                        line.starts_with(&prefix) || line.starts_with(&self.text)
                    }
                }
            }
        }
    }
}

/// A word of a command, or one of its redirections: never equal to each other, so a rule naming
/// `'> b.txt'` as an argument does not grant writing `b.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Redirection(Word),
}

impl Token {
    fn word(&self) -> &Word {
        match self {
            Token::Word(word) | Token::Redirection(word) => word,
        }
    }
}

/// Tokens as one line: words quoted where needed, redirections as the analysis wrote them.
fn line_of(tokens: &[Token]) -> String {
    let words = tokens.iter().filter_map(|t| match t {
        Token::Word(word) => Some(word),
        Token::Redirection(_) => None,
    });
    let redirections = tokens.iter().filter_map(|t| match t {
        Token::Redirection(word) => Some(word),
        Token::Word(_) => None,
    });
    render::line(words, redirections)
}

/// A command's tokens: assignments, words, redirections.
fn command_tokens(command: &Command) -> Vec<Token> {
    command
        .assignments
        .iter()
        .chain(&command.words)
        .cloned()
        .map(Token::Word)
        .chain(command.redirections.iter().cloned().map(Token::Redirection))
        .collect()
}

/// The specifier as the tokens of the one simple command it spells, or split at whitespace when
/// it is not one (an operator, an unfinished quote).
fn tokens_of(spec: &str) -> Vec<Token> {
    let analysis = analyze(spec);
    let direct = analysis
        .commands
        .iter()
        .filter(|c| c.origin == Origin::Shell)
        .count();
    match (analysis.is_understood(), direct, analysis.commands.first()) {
        (true, 1, Some(command)) => command_tokens(command),
        _ => spec
            .split_whitespace()
            .map(|w| Token::Word(Word::fixed(w)))
            .collect(),
    }
}

/// The token lists a command is compared as: for granting, as written and with a system path
/// resolved (`/usr/bin/git` → `git`); for restricting also without its assignments and with any
/// path reduced to its basename.
fn candidates(command: &Command, purpose: Purpose) -> Vec<Vec<Token>> {
    let with = command_tokens(command);
    let assignments = command.assignments.len();
    let mut out = vec![with.clone()];
    match purpose {
        Purpose::Grant => {
            if let (Some(program), Some(first)) = (command.program(), command.words.first()) {
                if program != first.text {
                    let mut resolved = with;
                    resolved[assignments] = Token::Word(Word::fixed(program));
                    out.push(resolved);
                }
            }
        }
        Purpose::Restrict => {
            let without: Vec<Token> = with[assignments..].to_vec();
            out.extend(with_basename(&with, assignments));
            out.extend(with_basename(&without, 0));
            out.push(without);
        }
    }
    out
}

/// `tokens` with the program word at `at` reduced to its basename, if it is a path.
fn with_basename(tokens: &[Token], at: usize) -> Option<Vec<Token>> {
    let Token::Word(program) = tokens.get(at)? else {
        return None;
    };
    let (_, name) = program.text.rsplit_once('/')?;
    if program.kind != WordKind::Static || name.is_empty() {
        return None;
    }
    let mut out = tokens.to_vec();
    out[at] = Token::Word(Word::fixed(name));
    Some(out)
}
