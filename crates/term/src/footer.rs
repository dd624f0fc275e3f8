//! Lines a `statusLine` command printed, made safe to draw under the prompt: colours (SGR
//! sequences) kept, every other control character or sequence dropped, cut to the width.

use unicode_width::UnicodeWidthChar;

/// Draws `mode` (vim's) and the footer's lines below what is drawn (`after`: on new rows);
/// how many rows.
pub fn draw(
    mode: Option<&str>,
    footer: Option<&str>,
    after: bool,
    cols: usize,
    buf: &mut String,
) -> usize {
    let mut drawn = 0;
    for line in mode
        .into_iter()
        .chain(footer.into_iter().flat_map(str::lines))
    {
        if after || drawn > 0 {
            buf.push_str("\r\n");
        }
        buf.push_str(&fit(line, cols - 1));
        drawn += 1;
    }
    drawn
}

/// `line` with only its colours for control sequences, cut to `cols` visible columns.
pub fn fit(line: &str, cols: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut styled = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() != Some(&'[') {
                continue;
            }
            chars.next();
            let mut seq = String::new();
            for c in chars.by_ref() {
                seq.push(c);
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            let sgr = seq.ends_with('m')
                && seq[..seq.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ';');
            if sgr {
                out.push_str("\u{1b}[");
                out.push_str(&seq);
                styled = true;
            }
            continue;
        }
        if c.is_control() {
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w > cols {
            break;
        }
        out.push(c);
        used += w;
    }
    if styled {
        out.push_str("\u{1b}[0m");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn keeps_colours_drops_other_controls_and_cuts_to_the_width() {
        assert_eq!(fit("plain", 10), "plain");
        assert_eq!(fit("\u{1b}[32mgreen\u{1b}[0m", 3), "\u{1b}[32mgre\u{1b}[0m");
        assert_eq!(fit("a\u{1b}[2Jb\u{7}c\td", 10), "abcd");
        assert_eq!(fit("日本語", 4), "日本");
    }
}
