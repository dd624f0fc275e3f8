//! One shell word after quote removal: its text when it is static, how far it can be trusted
//! when it is not, and the commands its substitutions run.

use super::{Word, WordKind};
use brush_parser::word::{self, Parameter, ParameterExpr, ParameterTransformOp, WordPiece};
use brush_parser::ParserOptions;

/// A word as the analysis understands it.
#[derive(Debug, Default)]
pub(super) struct Expanded {
    /// Text after quote removal (only meaningful when nothing is dynamic).
    text: String,
    /// Static text before the first expansion.
    prefix: String,
    /// Some piece expands at run time.
    dynamic: bool,
    /// Some unquoted expansion can split into several words.
    splits: bool,
    /// Command lines run by `$(…)` and backticks in the word, for the walker to analyse.
    pub commands: Vec<String>,
    /// Expansions that can run commands by themselves; each makes the line unknown.
    pub risks: Vec<String>,
}

impl Expanded {
    /// The word, given how it was written.
    pub fn word(&self, raw: &str) -> Word {
        if !self.dynamic {
            return Word::fixed(self.text.clone());
        }
        let kind = if self.splits || self.prefix.is_empty() || self.prefix.starts_with('-') {
            WordKind::Dynamic
        } else {
            WordKind::DynamicOperand
        };
        Word {
            text: raw.to_string(),
            kind,
        }
    }

    fn literal(&mut self, text: &str) {
        self.text.push_str(text);
        if !self.dynamic {
            self.prefix.push_str(text);
        }
    }

    fn expansion(&mut self, quoting: Quoting) {
        self.dynamic = true;
        if quoting == Quoting::Unquoted {
            self.splits = true;
        }
    }

    fn absorb(&mut self, other: Expanded) {
        self.commands.extend(other.commands);
        self.risks.extend(other.risks);
    }
}

/// Whether a piece stands inside double quotes (no splitting, no globbing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    Unquoted,
    Double,
}

/// How brush should read words: as `bash -c` does (no extglob; tildes are judged here).
pub(super) fn parser_options() -> ParserOptions {
    ParserOptions {
        enable_extended_globbing: false,
        tilde_expansion_at_word_start: false,
        tilde_expansion_after_colon: false,
        ..ParserOptions::default()
    }
}

/// Expands one word as written.
pub(super) fn expand(raw: &str) -> Expanded {
    let mut out = Expanded::default();
    let pieces = match parse(raw, Body::Word) {
        Some(pieces) => pieces,
        None => {
            out.dynamic = true;
            out.splits = true;
            out.risks
                .push(format!("the word `{raw}`, which could not be parsed,"));
            return out;
        }
    };
    if raw.starts_with('~') {
        // Tilde expansion: a home directory, so a path, never an option.
        out.dynamic = true;
        out.prefix.push('~');
    }
    for piece in pieces {
        piece_into(&mut out, piece, Quoting::Unquoted);
    }
    out
}

/// Expands the body of a here-document whose delimiter is unquoted.
pub(super) fn expand_heredoc(body: &str) -> Expanded {
    let mut out = Expanded::default();
    match parse(body, Body::HereDoc) {
        Some(pieces) => {
            for piece in pieces {
                piece_into(&mut out, piece, Quoting::Double);
            }
        }
        None => out
            .risks
            .push("a here-document that could not be parsed".to_string()),
    }
    out
}

/// Which word grammar to parse with.
#[derive(Clone, Copy)]
enum Body {
    Word,
    HereDoc,
}

/// brush's pieces of `text`; `None` if it cannot parse them (or panics doing so).
fn parse(text: &str, body: Body) -> Option<Vec<WordPiece>> {
    let options = parser_options();
    let parsed = std::panic::catch_unwind(|| match body {
        Body::Word => word::parse(text, &options),
        Body::HereDoc => word::parse_heredoc(text, &options),
    });
    match parsed {
        Ok(Ok(pieces)) => Some(pieces.into_iter().map(|p| p.piece).collect()),
        Ok(Err(_)) | Err(_) => None,
    }
}

fn piece_into(out: &mut Expanded, piece: WordPiece, quoting: Quoting) {
    match piece {
        WordPiece::Text(text) => match quoting {
            Quoting::Double => out.literal(&text),
            Quoting::Unquoted => unquoted_text(out, &text),
        },
        WordPiece::SingleQuotedText(text) => out.literal(&text),
        WordPiece::AnsiCQuotedText(text) => match ansi_c(&text) {
            Some(decoded) => out.literal(&decoded),
            // An escape it does not know: the word is not trusted, but quoted, so not split.
            None => out.expansion(Quoting::Double),
        },
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            for piece in inner {
                piece_into(out, piece.piece, Quoting::Double);
            }
        }
        WordPiece::EscapeSequence(escape) => {
            let mut chars = escape.chars();
            chars.next();
            let rest: String = chars.collect();
            let kept = match quoting {
                Quoting::Unquoted => rest,
                // Inside double quotes only these lose their backslash.
                Quoting::Double if matches!(rest.as_str(), "$" | "`" | "\"" | "\\") => rest,
                Quoting::Double if rest == "\n" => String::new(),
                Quoting::Double => escape,
            };
            if kept != "\n" {
                out.literal(&kept);
            }
        }
        WordPiece::TildeExpansion(_) => out.expansion(Quoting::Double),
        WordPiece::ParameterExpansion(expr) => {
            out.expansion(quoting);
            parameter(out, &expr);
        }
        WordPiece::CommandSubstitution(command) => {
            out.expansion(quoting);
            out.commands.push(command);
        }
        WordPiece::BackquotedCommandSubstitution(command) => {
            out.expansion(quoting);
            out.commands.push(unescape_backquoted(&command));
        }
        WordPiece::ArithmeticExpression(expr) => {
            out.expansion(quoting);
            arithmetic(out, &expr.value);
        }
    }
}

/// Unquoted literal text: globs and brace expansions make the word dynamic from where they start.
fn unquoted_text(out: &mut Expanded, text: &str) {
    match pattern_start(text) {
        None => out.literal(text),
        Some(start) => {
            out.literal(&text[..start]);
            out.dynamic = true;
            out.text.push_str(&text[start..]);
        }
    }
}

/// Where the first glob (`*`, `?`, `[…]`) or brace expansion (`{a,b}`, `{1..3}`) starts.
fn pattern_start(text: &str) -> Option<usize> {
    let glob = text.char_indices().find_map(|(i, c)| match c {
        '*' | '?' => Some(i),
        '[' if text[i + 1..].contains(']') => Some(i),
        _ => None,
    });
    let brace = text.char_indices().find_map(|(i, c)| {
        if c != '{' {
            return None;
        }
        let close = text[i..].find('}')?;
        let inner = &text[i + 1..i + close];
        (inner.contains(',') || inner.contains("..")).then_some(i)
    });
    match (glob, brace) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Judges a parameter expansion: forms that evaluate text as code are risks; nested words
/// (default values, patterns) are expanded for their substitutions.
fn parameter(out: &mut Expanded, expr: &ParameterExpr) {
    let mut nested: Vec<&str> = Vec::new();
    let (parameter, indirect) = match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::ParameterLength {
            parameter,
            indirect,
        } => (parameter, *indirect),
        ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            default_value: value,
            ..
        }
        | ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            default_value: value,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: value,
            ..
        }
        | ParameterExpr::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: value,
            ..
        }
        | ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            pattern: value,
        } => {
            nested.extend(value.as_deref());
            (parameter, *indirect)
        }
        ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            nested.push(pattern);
            nested.extend(replacement.as_deref());
            (parameter, *indirect)
        }
        ParameterExpr::Substring {
            parameter,
            indirect,
            offset,
            length,
        } => {
            arithmetic(out, &offset.value);
            if let Some(length) = length {
                arithmetic(out, &length.value);
            }
            (parameter, *indirect)
        }
        ParameterExpr::Transform {
            parameter,
            indirect,
            op,
        } => {
            if matches!(op, ParameterTransformOp::PromptExpand) {
                out.risks
                    .push("prompt expansion (`${x@P}`) runs substitutions in a value; it".into());
            }
            (parameter, *indirect)
        }
        ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => return,
    };
    if indirect {
        out.risks
            .push("indirect expansion (`${!x}`) evaluates array subscripts in a value; it".into());
    }
    if let Parameter::NamedWithIndex { index, .. } = parameter {
        subscript(out, index);
    }
    for text in nested {
        let inner = expand(text);
        out.absorb(inner);
    }
}

/// An array subscript is arithmetic, which can run commands unless it is a plain number.
pub(super) fn subscript(out: &mut Expanded, index: &str) {
    let index = index.trim();
    let plain = index == "@" || index == "*" || index.chars().all(|c| c.is_ascii_digit());
    if !plain {
        out.risks.push(format!(
            "the array subscript `[{index}]` is arithmetic that"
        ));
    }
}

/// Arithmetic is safe only on literal numbers: a variable's value is itself evaluated as
/// arithmetic, and `a[$(cmd)]` in it runs `cmd`.
pub(super) fn arithmetic(out: &mut Expanded, expr: &str) {
    let literal = expr
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c));
    if !literal {
        out.risks.push(format!(
            "arithmetic on names or substitutions (`{}`)",
            expr.trim()
        ));
    }
}

/// Undoes the backslashes that backquotes add: `\\`, `` \` `` and `\$`.
fn unescape_backquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(next @ ('\\' | '`' | '$'))) => {
                out.push(*next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Decodes the body of `$'…'`; `None` for an escape whose meaning it does not pin down.
pub(super) fn ansi_c(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escape = chars.next()?;
        let decoded = match escape {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'e' | 'E' => '\u{1b}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' | '\'' | '"' | '?' => escape,
            '0'..='7' => {
                let mut value = escape.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(value & 0xff)?
            }
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            _ => return None,
        };
        if decoded == '\0' {
            // bash cuts the string at a NUL.
            return None;
        }
        out.push(decoded);
    }
    Some(out)
}

/// Up to `max` hex digits as a character; `None` without any.
fn hex(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize) -> Option<char> {
    let mut value = 0u32;
    let mut digits = 0;
    while digits < max {
        match chars.peek().and_then(|d| d.to_digit(16)) {
            Some(digit) => {
                value = value.checked_mul(16)?.checked_add(digit)?;
                chars.next();
                digits += 1;
            }
            None => break,
        }
    }
    if digits == 0 {
        return None;
    }
    char::from_u32(value)
}
