//! The change an `edit_file` or `write_file` call would make, as a diff to show before asking:
//! removed lines `-` (red), added `+` (green), two lines of context, long diffs cut short.
//! Every line is sanitised: a file or a model may carry terminal control sequences.

use crate::render::sanitize::terminal;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::fmt::Write as _;
use std::path::Path;

/// At most this many diff lines are shown.
const MAX_LINES: usize = 60;
/// Files larger than this are not read for the diff (the new content is shown instead).
const MAX_READ: u64 = 1 << 20;

/// The diff for a call of `tool` with `input`, or `None` for other tools.
pub fn preview(tool: &str, input: &Value, workspace: &Path, colour: bool) -> Option<String> {
    let field = |name: &str| input.get(name).and_then(Value::as_str);
    let (old, new) = match tool {
        "edit_file" => (
            field("old_string")?.to_string(),
            field("new_string")?.to_string(),
        ),
        "write_file" => {
            let path = workspace.join(field("path")?);
            let old = match std::fs::metadata(&path) {
                Ok(m) if m.is_file() && m.len() <= MAX_READ => {
                    std::fs::read_to_string(&path).unwrap_or_default()
                }
                _ => String::new(),
            };
            (old, field("content")?.to_string())
        }
        _ => return None,
    };
    Some(render(&old, &new, colour))
}

/// The line diff of `old` and `new`.
fn render(old: &str, new: &str, colour: bool) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut lines: Vec<String> = Vec::new();
    for (i, group) in diff.grouped_ops(2).iter().enumerate() {
        if i > 0 {
            lines.push(paint(colour, "2", "    ⋯"));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = terminal(change.value().trim_end_matches(['\n', '\r']));
                let line = match change.tag() {
                    ChangeTag::Delete => paint(colour, "31", &format!("  - {text}")),
                    ChangeTag::Insert => paint(colour, "32", &format!("  + {text}")),
                    ChangeTag::Equal => paint(colour, "2", &format!("    {text}")),
                };
                lines.push(line);
            }
        }
    }
    if lines.is_empty() {
        return "  (no change)".to_string();
    }
    let more = lines.len().saturating_sub(MAX_LINES);
    lines.truncate(MAX_LINES);
    let mut out = lines.join("\n");
    if more > 0 {
        let _ = write!(out, "\n  … {more} more lines");
    }
    out
}

/// `text` in the SGR style `sgr` when colour is on.
pub fn paint(colour: bool, sgr: &str, text: &str) -> String {
    match colour {
        true => format!("\u{1b}[{sgr}m{text}\u{1b}[0m"),
        false => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_shows_removed_and_added_lines() {
        let input = json!({"path": "a", "old_string": "one\ntwo\n", "new_string": "one\n2\n"});
        let text = preview("edit_file", &input, Path::new("/nonexistent"), false).unwrap();
        assert_eq!(text, "    one\n  - two\n  + 2");
    }

    #[test]
    fn a_write_diffs_against_the_file_and_sanitises() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "keep\nold\n").unwrap();
        let input = json!({"path": "f", "content": "keep\nnew\u{1b}]52;c;x\u{7}\n"});
        let text = preview("write_file", &input, dir.path(), false).unwrap();
        assert_eq!(text, "    keep\n  - old\n  + new\\x1b]52;c;x\\x07");
        let input = json!({"path": "g", "content": "fresh\n"});
        assert_eq!(
            preview("write_file", &input, dir.path(), false).unwrap(),
            "  + fresh"
        );
        assert!(preview("bash", &input, dir.path(), false).is_none());
    }

    #[test]
    fn long_diffs_are_cut_and_coloured_when_asked() {
        let new: String = (0..100).map(|i| format!("{i}\n")).collect();
        let text = render("", &new, true);
        assert!(text.contains("\u{1b}[32m  + 0\u{1b}[0m"), "{text}");
        assert!(text.ends_with("… 40 more lines"), "{text}");
    }
}
