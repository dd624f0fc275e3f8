//! Redirections as the analysis records them: a token per redirection, and whether its target
//! is a file or only a descriptor or a harmless device.

use super::{render, Word, WordKind};

/// A redirection token, dynamic when its target is.
pub(super) fn redirection_token(token: String, target: &Word) -> Word {
    Word {
        text: token,
        kind: match target.kind {
            WordKind::Static => WordKind::Static,
            WordKind::Dynamic | WordKind::DynamicOperand => WordKind::Dynamic,
        },
    }
}

pub(super) fn render_target(word: &Word) -> String {
    match word.kind {
        WordKind::Static => render::quote(&word.text),
        WordKind::Dynamic | WordKind::DynamicOperand => word.text.clone(),
    }
}

/// Output that goes nowhere or to the standard streams writes no file.
pub(super) fn is_harmless_target(word: &Word) -> bool {
    word.kind == WordKind::Static
        && matches!(
            word.text.as_str(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr"
        )
}

/// `2>&1`, `>&-`, `>&2-`: a descriptor, not a file name.
pub(super) fn is_descriptor(word: &Word) -> bool {
    let digits = word.text.trim_end_matches('-');
    word.kind == WordKind::Static
        && (digits.is_empty() || digits.chars().all(|c| c.is_ascii_digit()))
}
