//! Text from models and files made safe to print.
//!
//! Roles, names, mail and model output can carry terminal control sequences: an OSC 52
//! clipboard write (`ESC ] 52 ; c ; … BEL`), a hyperlink that lies about its target (OSC 8),
//! a carriage return or backspaces that overwrite what a person is about to approve, bidi
//! overrides that reorder it. Everything troupe writes to a terminal goes through
//! [`terminal`], which shows such characters as visible escapes instead of obeying them.
//! JSON output is escaped by serde already, except DEL and the C1 range, which [`json_line`]
//! adds.

use std::borrow::Cow;

/// True for a character a terminal may act on rather than display.
fn is_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings, overrides and isolates reorder the text around them.
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || c == '\r'
}

/// `text` with every control character other than newline and tab shown as a visible escape
/// (`\x1b`, `\x07`, `\u{9b}`, …). A carriage return that ends a line (`\r\n`) or the text is
/// dropped; any other one is shown as `\r`, so nothing can overwrite what was printed before.
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if matches!(chars.peek(), None | Some('\n')) => {}
            '\r' => out.push_str("\\r"),
            c if is_control(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A serialized JSON text with DEL and C1 control characters written as `\u` escapes. serde
/// escapes the C0 range itself; these two it leaves raw, and some terminals obey C1 controls
/// (U+009B is CSI). Outside strings JSON holds only ASCII punctuation, so every such character
/// is inside a string, where the escape means the same character.
pub fn json_line(json: &str) -> Cow<'_, str> {
    let raw = |c: char| matches!(c, '\u{7f}'..='\u{9f}');
    if !json.chars().any(raw) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `print!` with the formatted text passed through [`terminal`]; a closed stdout is ignored
/// (the REPL goes on; a subcommand has already ended by SIGPIPE).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::sanitize::write_stdout(&$crate::sanitize::terminal(&format!($($arg)*)))
    };
}

/// `println!` with the formatted text passed through [`terminal`]; a closed stdout is ignored.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::sanitize::write_stdout(&format!(
            "{}\n",
            $crate::sanitize::terminal(&format!($($arg)*))
        ))
    };
}

/// Writes `text` to stdout and flushes it, ignoring a failed write (nobody is reading).
pub fn write_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// `eprintln!` with the formatted text passed through [`terminal`].
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::sanitize::terminal(&format!($($arg)*)))
    };
}

pub use crate::{errln, out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_passes_through_untouched() {
        let text = "café\tdone\nnext line — ✓ 日本";
        assert!(matches!(terminal(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_become_visible() {
        let osc52 = "role\u{1b}]52;c;ZXZpbA==\u{7}coder";
        assert_eq!(terminal(osc52), "role\\x1b]52;c;ZXZpbA==\\x07coder");
        let link = "\u{1b}]8;;http://evil\u{1b}\\safe\u{1b}]8;;\u{1b}\\";
        assert!(!terminal(link).contains('\u{1b}'));
        assert_eq!(terminal("\u{1b}[2J\u{1b}[31mred"), "\\x1b[2J\\x1b[31mred");
        assert_eq!(terminal("a\u{8}\u{8}b\u{0}"), "a\\x08\\x08b\\x00");
        assert_eq!(terminal("del\u{7f}"), "del\\x7f");
    }

    #[test]
    fn c1_controls_and_bidi_overrides_become_visible() {
        assert_eq!(terminal("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(terminal("\u{85}"), "\\u{85}");
        assert_eq!(terminal("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(terminal("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        // Ordinary characters just past the ranges stay.
        assert_eq!(terminal("\u{a0}\u{2022}"), "\u{a0}\u{2022}");
    }

    #[test]
    fn carriage_returns_cannot_overwrite_a_line() {
        assert_eq!(terminal("rm -rf ~\rls"), "rm -rf ~\\rls");
        assert_eq!(terminal("windows\r\nline\r\n"), "windows\nline\n");
        assert_eq!(terminal("ends\r"), "ends");
    }

    #[test]
    fn json_lines_escape_del_and_c1_and_stay_the_same_json() {
        let value = serde_json::json!({"text": "a\u{1b}[1m\u{9b}2J\u{7f}"});
        let line = value.to_string();
        let safe = json_line(&line);
        assert!(!safe.contains('\u{1b}') && !safe.contains('\u{9b}') && !safe.contains('\u{7f}'));
        assert!(safe.contains("\\u009b") && safe.contains("\\u007f"));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        let plain = serde_json::json!({"t": "ok"}).to_string();
        assert!(matches!(json_line(&plain), Cow::Borrowed(_)));
    }
}
