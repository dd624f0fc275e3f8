//! Tab at the prompt: completes a slash command's name (built-in and the project's custom
//! commands), or an `@path` word's path (from the folder troupe was started in, where `@`
//! paths are found), to the longest prefix the candidates share, adding a space (a `/` for a
//! folder) when only one is left. Anything else typed gets a tab, as before.

use super::line::Line;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The command names (without `/`), set once when the REPL starts.
static NAMES: OnceLock<Vec<String>> = OnceLock::new();

/// The folder `@` paths are completed from, set once when the REPL starts.
static BASE: OnceLock<PathBuf> = OnceLock::new();

/// Registers the names Tab completes; the first call wins.
pub fn set_commands(names: Vec<String>) {
    let _ = NAMES.set(names);
}

/// Registers the folder `@path` words are completed from; the first call wins.
pub fn set_path_base(dir: PathBuf) {
    let _ = BASE.set(dir);
}

/// The folder `@path` words are found in, once registered.
pub fn path_base() -> Option<&'static Path> {
    BASE.get().map(PathBuf::as_path)
}

/// Tab on `line`.
pub fn tab(line: &mut Line) {
    let text = line.text();
    let at_end = line.cursor() == line.chars().len();
    let completed = NAMES
        .get()
        .and_then(|names| complete(&text, at_end, names))
        .or_else(|| {
            BASE.get()
                .and_then(|base| complete_path(&text, at_end, base))
        });
    match completed {
        Some(new) => line.set(&new),
        None => line.insert("\t"),
    }
}

/// The completed line, when the cursor ends an `@path` mention (plain, escaped, or in quotes
/// not yet closed) and some entry of its folder starts with what is typed (hidden ones only
/// when a `.` is typed). A path with a blank is written in quotes: `@"notes with spaces.md" `.
fn complete_path(text: &str, at_end: bool, base: &Path) -> Option<String> {
    if !at_end {
        return None;
    }
    let mention = super::mention::mentions(text)
        .into_iter()
        .rfind(|m| m.end == text.len() && !m.closed)?;
    let typed = mention.raw.as_str();
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let mut matches: Vec<(String, bool)> = std::fs::read_dir(base.join(dir))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let shown =
                name.starts_with(prefix) && (!name.starts_with('.') || prefix.starts_with('.'));
            shown.then(|| (name, e.path().is_dir()))
        })
        .collect();
    matches.sort();
    let (path, whole) = match matches.as_slice() {
        [] => return None,
        [(name, true)] => (format!("{dir}{name}/"), false),
        [(name, false)] => (format!("{dir}{name}"), true),
        many => {
            let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
            (format!("{dir}{}", shared_prefix(&names)), false)
        }
    };
    let quoted = mention.quoted || path.contains(char::is_whitespace);
    let word = match (quoted, whole) {
        (true, true) => format!("@\"{path}\" "),
        (true, false) => format!("@\"{path}"),
        (false, true) => format!("@{path} "),
        (false, false) => format!("@{path}"),
    };
    Some(format!("{}{word}", &text[..mention.start]))
}

/// The longest prefix every name starts with.
fn shared_prefix<'a>(names: &[&'a str]) -> &'a str {
    let Some(first) = names.first() else {
        return "";
    };
    let mut common: &str = first;
    for name in &names[1..] {
        let shared = common
            .char_indices()
            .zip(name.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        common = &common[..shared];
    }
    common
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
            let names: Vec<&str> = many.iter().map(|n| n.as_str()).collect();
            Some(format!("/{}", shared_prefix(&names)))
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

    #[test]
    fn completes_an_at_path_from_the_start_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/term")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mail.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join(".env"), "").unwrap();
        let base = dir.path();
        let c = |text: &str| complete_path(text, true, base);
        assert_eq!(c("read @RE").as_deref(), Some("read @README.md "));
        assert_eq!(c("read @s").as_deref(), Some("read @src/"));
        assert_eq!(c("@src/m").as_deref(), Some("@src/mai"));
        assert_eq!(c("@src/main").as_deref(), Some("@src/main.rs "));
        assert_eq!(c("@src/t").as_deref(), Some("@src/term/"));
        assert_eq!(c("@.e").as_deref(), Some("@.env "));
        assert_eq!(c("@zz"), None);
        assert_eq!(c("no at here"), None);
        assert_eq!(complete_path("@RE", false, base), None);
        // Hidden entries are offered only when a dot is typed.
        assert_eq!(c("@").as_deref(), Some("@"));
    }

    #[test]
    fn a_path_with_blanks_is_completed_in_quotes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("my notes")).unwrap();
        std::fs::write(dir.path().join("my notes/day one.md"), "").unwrap();
        std::fs::write(dir.path().join("notes with spaces.md"), "").unwrap();
        std::fs::write(dir.path().join("notes with tabs.md"), "").unwrap();
        let c = |text: &str| complete_path(text, true, dir.path());
        assert_eq!(c("read @no").as_deref(), Some("read @\"notes with "));
        assert_eq!(
            c("read @\"notes with s").as_deref(),
            Some("read @\"notes with spaces.md\" ")
        );
        assert_eq!(
            c(r"read @notes\ with\ t").as_deref(),
            Some("read @\"notes with tabs.md\" ")
        );
        assert_eq!(c("@my").as_deref(), Some("@\"my notes/"));
        assert_eq!(
            c("@\"my notes/d").as_deref(),
            Some("@\"my notes/day one.md\" ")
        );
        assert_eq!(c("@\"notes with spaces.md\""), None);
    }
}
