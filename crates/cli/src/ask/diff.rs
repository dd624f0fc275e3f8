//! The change an `edit_file` or `write_file` call would make, as a diff to show before asking:
//! each line with its number in the file, removed lines `-` (red), added `+` (green), one line
//! of context, long diffs cut short.
//! Every line is sanitised: a file or a model may carry terminal control sequences.

use crate::render::sanitize::terminal;
use crossterm::style::{ContentStyle, Stylize};
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
    let read = |path: &Path| match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() <= MAX_READ => std::fs::read_to_string(path).ok(),
        _ => None,
    };
    match tool {
        "edit_file" => {
            let (old, new) = (field("old_string")?, field("new_string")?);
            let all = input.get("replace_all").and_then(Value::as_bool) == Some(true);
            // The edit applied to the file, so the lines carry their numbers and context.
            match read(&workspace.join(field("path")?)) {
                Some(file) if !old.is_empty() && file.contains(old) => {
                    let edited = match all {
                        true => file.replace(old, new),
                        false => file.replacen(old, new, 1),
                    };
                    Some(render(&file, &edited, true, colour))
                }
                _ => Some(render(old, new, false, colour)),
            }
        }
        "write_file" => {
            let old = read(&workspace.join(field("path")?)).unwrap_or_default();
            Some(render(&old, field("content")?, true, colour))
        }
        _ => None,
    }
}

/// The line diff of `old` and `new`, each line with its number (in the old file for removed
/// and unchanged lines, the new one for added lines) when `numbered`.
fn render(old: &str, new: &str, numbered: bool, colour: bool) -> String {
    let diff = TextDiff::from_lines(old, new);
    let width = old
        .lines()
        .count()
        .max(new.lines().count())
        .to_string()
        .len();
    let (dim, red, green) = (
        ContentStyle::new().dim(),
        ContentStyle::new().dark_red(),
        ContentStyle::new().dark_green(),
    );
    let mut lines: Vec<String> = Vec::new();
    for (i, group) in diff.grouped_ops(1).iter().enumerate() {
        if i > 0 {
            lines.push(paint(colour, dim, "    ⋯"));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = terminal(change.value().trim_end_matches(['\n', '\r']));
                let number = match (numbered, change.old_index().or(change.new_index())) {
                    (true, _) if change.tag() == ChangeTag::Insert => {
                        change.new_index().map(|n| n + 1)
                    }
                    (true, Some(n)) => Some(n + 1),
                    _ => None,
                };
                let number = number.map_or_else(String::new, |n| format!("{n:>width$} "));
                let line = match change.tag() {
                    ChangeTag::Delete => paint(colour, red, &format!("  {number}- {text}")),
                    ChangeTag::Insert => paint(colour, green, &format!("  {number}+ {text}")),
                    ChangeTag::Equal => paint(colour, dim, &format!("  {number}  {text}")),
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

/// `text` in `style` when colour is on.
pub fn paint(colour: bool, style: ContentStyle, text: &str) -> String {
    match colour {
        true => style.apply(text).to_string(),
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
    fn an_edit_of_a_file_shows_line_numbers_and_one_line_of_context() {
        let dir = tempfile::tempdir().unwrap();
        let file: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("f.txt"), file).unwrap();
        let input =
            json!({"path": "f.txt", "old_string": "line 10\n", "new_string": "ten\nand more\n"});
        let text = preview("edit_file", &input, dir.path(), false).unwrap();
        assert_eq!(
            text,
            "   9   line 9\n  10 - line 10\n  10 + ten\n  11 + and more\n  11   line 11"
        );
    }

    #[test]
    fn a_write_diffs_against_the_file_and_sanitises() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "keep\nold\n").unwrap();
        let input = json!({"path": "f", "content": "keep\nnew\u{1b}]52;c;x\u{7}\n"});
        let text = preview("write_file", &input, dir.path(), false).unwrap();
        assert_eq!(text, "  1   keep\n  2 - old\n  2 + new\\x1b]52;c;x\\x07");
        let input = json!({"path": "g", "content": "fresh\n"});
        assert_eq!(
            preview("write_file", &input, dir.path(), false).unwrap(),
            "  1 + fresh"
        );
        assert!(preview("bash", &input, dir.path(), false).is_none());
    }

    #[test]
    fn long_diffs_are_cut_and_coloured_when_asked() {
        let new: String = (0..100).map(|i| format!("{i}\n")).collect();
        let text = render("", &new, false, true);
        // Green (palette colour 2) on, the default colour back after.
        assert!(text.contains("\u{1b}[38;5;2m  + 0\u{1b}[39m"), "{text}");
        assert!(text.ends_with("… 40 more lines"), "{text}");
    }
}
