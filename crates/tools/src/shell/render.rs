//! Writes words back as shell text, so a rule suggested from a command parses to that command.

use super::{Word, WordKind};

/// Words and then redirection tokens as one line: static words quoted where the shell would split
/// or expand them, dynamic words and the redirection tokens (which the analysis wrote) as they are.
pub(super) fn line<'w>(
    words: impl IntoIterator<Item = &'w Word>,
    redirections: impl IntoIterator<Item = &'w Word>,
) -> String {
    let words = words.into_iter().map(|word| match word.kind {
        WordKind::Static => quote(&word.text),
        WordKind::DynamicOperand | WordKind::Dynamic => word.text.clone(),
    });
    let redirections = redirections.into_iter().map(|token| token.text.clone());
    words.chain(redirections).collect::<Vec<_>>().join(" ")
}

/// `text` as one shell word: unchanged when it holds nothing special, else single-quoted.
pub(super) fn quote(text: &str) -> String {
    let plain = |c: char| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '_' | '-' | '.' | '/' | ',' | ':' | '+' | '=' | '@' | '%' | '^'
            )
    };
    // The test commands read as they are written.
    let test_word = matches!(text, "[" | "]" | "[[" | "]]");
    if test_word || (!text.is_empty() && text.chars().all(plain)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
