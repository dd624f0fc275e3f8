//! Tab at the prompt: completes a slash command's name (built-in and the project's custom
//! commands) to the longest prefix the candidates share, and adds a space when only one is
//! left. Anything else typed gets a tab, as before.

use super::line::Line;
use std::sync::OnceLock;

/// The command names (without `/`), set once when the REPL starts.
static NAMES: OnceLock<Vec<String>> = OnceLock::new();

/// Registers the names Tab completes; the first call wins.
pub fn set_commands(names: Vec<String>) {
    let _ = NAMES.set(names);
}

/// Tab on `line`.
pub fn tab(line: &mut Line) {
    let text = line.text();
    let completed = NAMES
        .get()
        .and_then(|names| complete(&text, line.cursor() == line.chars().len(), names));
    match completed {
        Some(new) => line.set(&new),
        None => line.insert("\t"),
    }
}

/// The completed line, when `text` is a lone `/prefix` with the cursor at its end and some
/// command starts with it.
fn complete(text: &str, at_end: bool, names: &[String]) -> Option<String> {
    let prefix = text.strip_prefix('/')?;
    if !at_end || prefix.contains(char::is_whitespace) {
        return None;
    }
    let matching: Vec<&String> = names.iter().filter(|n| n.starts_with(prefix)).collect();
    match matching.as_slice() {
        [] => None,
        [one] => Some(format!("/{one} ")),
        many => {
            let mut common = many[0].as_str();
            for name in &many[1..] {
                let shared = common
                    .char_indices()
                    .zip(name.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((i, a), _)| i + a.len_utf8());
                common = &common[..shared];
            }
            Some(format!("/{common}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_to_the_shared_prefix_then_the_name() {
        let names: Vec<String> = ["help", "frontend:component", "frontend:styling", "fix"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(complete("/he", true, &names).as_deref(), Some("/help "));
        assert_eq!(complete("/fr", true, &names).as_deref(), Some("/frontend:"));
        assert_eq!(
            complete("/frontend:c", true, &names).as_deref(),
            Some("/frontend:component ")
        );
        assert_eq!(complete("/f", true, &names).as_deref(), Some("/f"));
        assert_eq!(complete("/zz", true, &names), None);
        assert_eq!(complete("hello", true, &names), None);
        assert_eq!(complete("/help me", true, &names), None);
        assert_eq!(complete("/he", false, &names), None);
    }
}
