//! Text as the dashboard shows it: made safe for a terminal, cut to one line, and the small
//! formats (clock time, ages, token counts, money) every pane uses.

use std::borrow::Cow;

/// True for a character a terminal may act on rather than display.
fn is_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidi embeddings, overrides and isolates reorder the text around them.
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One line of `text` safe to draw: names, roles, mail and model output may carry terminal
/// control sequences (a clipboard write, a screen clear); they are shown as visible escapes
/// (`\x1b`), and a tab as spaces, instead of being obeyed. Newlines are shown as `⏎`: callers
/// that want several lines split first (see [`lines`]).
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push_str(" ⏎ "),
            c if is_control(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if is_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Each line of `text`, cleaned (a `\r\n` ending counts as a newline).
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| clean(l.strip_suffix('\r').unwrap_or(l)).into_owned())
        .collect()
}

/// The first line of `text`, cleaned, cut to `max` characters with an ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let more = text.lines().nth(1).is_some();
    let line = clean(first);
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if more {
        format!("{line} …")
    } else {
        line.into_owned()
    }
}

/// A time of day `HH:MM:SS` (UTC, as `troupe team log` prints it).
pub fn clock(ts_ms: u64) -> String {
    let secs = ts_ms / 1000;
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02}")
}

/// How long ago `then` was at `now`: "5s", "3m", "2h", "4d"; "-" when never.
pub fn age(now_ms: u64, then_ms: u64) -> String {
    if then_ms == 0 {
        return "-".to_string();
    }
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3_599 => format!("{}m", secs / 60),
        3_600..=86_399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// A token count in a few characters: "950", "12.3k", "4.1M".
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Dollars, or "-" when the price is unknown.
pub fn money(usd: Option<f64>) -> String {
    match usd {
        Some(v) if v < 0.01 && v > 0.0 => "<$0.01".to_string(),
        Some(v) => format!("${v:.2}"),
        None => "-".to_string(),
    }
}

/// The end of a long id, enough to tell ids apart ("…7Q2KX9"); ULIDs share their start.
pub fn short_id(id: &str) -> String {
    let n = id.chars().count();
    if n <= 8 {
        id.to_string()
    } else {
        format!("…{}", id.chars().skip(n - 6).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_shown_not_obeyed() {
        assert_eq!(clean("plain"), "plain");
        assert_eq!(clean("a\u{1b}]52;c;x\u{7}b"), "a\\x1b]52;c;x\\x07b");
        assert_eq!(clean("x\u{9b}2J"), "x\\u{9b}2J");
        assert_eq!(clean("r\rw"), "r\\x0dw");
        assert_eq!(lines("one\r\ntwo\u{1b}"), vec!["one", "two\\x1b"]);
    }

    #[test]
    fn formats() {
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("ab\ncd", 10), "ab …");
        assert_eq!(clock(86_400_000 + 3_723_000), "01:02:03");
        assert_eq!(age(10_000, 0), "-");
        assert_eq!(age(130_000, 10_000), "2m");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(money(Some(0.004)), "<$0.01");
        assert_eq!(money(None), "-");
        assert_eq!(short_id("01JABCDEFGHJKMNPQRSTVWXYZ0"), "…VWXYZ0");
        assert_eq!(short_id("r1"), "r1");
    }
}
