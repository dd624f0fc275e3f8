//! How deeply a text nests, counted before parsing: the parser recurses on each level of
//! brackets and compound commands, and must never be handed enough to overflow its stack.

/// How deeply `text` nests brackets and compound commands, overcounting (quotes are ignored),
/// so that text the parser could overflow its stack on is never parsed.
pub(super) fn nesting(text: &str) -> usize {
    const OPENERS: [&str; 6] = ["if", "case", "while", "until", "for", "select"];
    const CLOSERS: [&str; 3] = ["fi", "esac", "done"];
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut command_start = true;
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            if command_start && OPENERS.contains(&word.as_str()) {
                depth += 1;
            } else if CLOSERS.contains(&word.as_str()) {
                depth = depth.saturating_sub(1);
            }
            command_start = matches!(word.as_str(), "then" | "do" | "else" | "elif");
            word.clear();
        }
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if matches!(c, ';' | '&' | '|' | '\n' | '(' | '{' | '!') {
            command_start = true;
        } else if !c.is_whitespace() {
            command_start = false;
        }
        deepest = deepest.max(depth);
    }
    deepest
}
