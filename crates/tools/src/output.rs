//! Output budgets: long tool output keeps its head and tail (where errors and summaries usually
//! are) and says how much was left out, so the model's context is not flooded.

use std::collections::VecDeque;

/// Default byte budget for one tool result's text.
pub const DEFAULT_OUTPUT_BUDGET: usize = 30_000;

/// Default longest line (in characters) shown by read_file and grep before it is cut.
pub const DEFAULT_LINE_LIMIT: usize = 2_000;

/// Shortens `text` to about `max_bytes` by keeping its head and tail and putting a marker in the
/// middle that states how many bytes were omitted and the total size. Cuts fall on character
/// boundaries. The marker itself (under 100 bytes) is not counted in the budget.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let head_end = floor_char_boundary(text, max_bytes / 2);
    let tail_start = ceil_char_boundary(text, text.len() - (max_bytes - max_bytes / 2));
    join_with_marker(
        &text[..head_end],
        &text[tail_start..],
        text.len() as u64,
        text.lines().count() as u64,
    )
}

/// Cuts a single line to `max_chars` characters, noting the cut, so one minified line cannot
/// take the whole budget.
pub fn truncate_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        None => line.to_owned(),
        Some((cut, _)) => {
            let total = line.chars().count();
            format!(
                "{}… [line cut: {} of {total} characters shown]",
                &line[..cut],
                max_chars
            )
        }
    }
}

/// A streaming collector that keeps the first and last halves of a byte budget of output whose
/// total size is not known in advance (a running command), counting everything it is given.
#[derive(Debug)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
    /// Newlines pushed, and whether the last byte pushed was one (for the line count).
    newlines: u64,
    ends_in_newline: bool,
}

impl HeadTail {
    /// A collector keeping at most `max_bytes` in all.
    pub fn new(max_bytes: usize) -> Self {
        let head_cap = max_bytes / 2;
        HeadTail {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: max_bytes - head_cap,
            total: 0,
            newlines: 0,
            ends_in_newline: true,
        }
    }

    /// Adds a chunk of output.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        if let Some(last) = chunk.last() {
            self.ends_in_newline = *last == b'\n';
        }
        if self.head.len() < self.head_cap {
            let take = chunk.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(chunk[chunk.len() - self.tail_cap..].iter().copied());
        } else {
            self.tail.extend(chunk.iter().copied());
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    /// How many bytes were pushed in all.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// The kept output as text (invalid UTF-8 replaced), with an omission marker if anything was
    /// dropped.
    pub fn into_text(self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        if kept == self.total {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = trim_incomplete_end(&self.head);
        let tail = trim_incomplete_start(&tail);
        let lines = self.newlines + u64::from(!self.ends_in_newline);
        join_with_marker(
            &String::from_utf8_lossy(head),
            &String::from_utf8_lossy(tail),
            self.total,
            lines,
        )
    }
}

/// Puts head, marker and tail together; the omitted counts are derived from the lengths. The
/// marker names the lines left out (those of the whole output, `lines`, not shown), so a
/// summary can count the output's true lines: shown lines (marker excluded) + omitted lines.
fn join_with_marker(head: &str, tail: &str, total: u64, lines: u64) -> String {
    let omitted = total.saturating_sub(head.len() as u64 + tail.len() as u64);
    let mut out = String::with_capacity(head.len() + tail.len() + 100);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    let shown = (out.lines().count() + tail.lines().count()) as u64;
    let omitted_lines = lines.saturating_sub(shown);
    out.push_str(&format!(
        "[... {omitted} bytes omitted ({omitted_lines} lines); output was {total} bytes in total, {lines} lines ...]\n"
    ));
    out.push_str(tail);
    out
}

/// The lines an omission marker in `text` says were left out (0 without one).
pub fn omitted_lines(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("[... ") && l.ends_with(" lines ...]"))
        .filter_map(|l| {
            let start = l.find(" bytes omitted (")? + " bytes omitted (".len();
            let end = start + l[start..].find(" lines)")?;
            l[start..end].parse::<u64>().ok()
        })
        .sum()
}

/// The largest char boundary at or below `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary at or above `index`.
fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Drops a multi-byte character cut in half at the end of a byte buffer.
fn trim_incomplete_end(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    }
}

/// Drops the continuation bytes of a character cut in half at the start of a byte buffer.
fn trim_incomplete_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate_middle("hello", 10), "hello");
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_states_sizes() {
        let text = format!("{}{}{}", "a".repeat(100), "b".repeat(1000), "c".repeat(100));
        let out = truncate_middle(&text, 200);
        assert!(out.starts_with(&"a".repeat(100)));
        assert!(out.ends_with(&"c".repeat(100)));
        assert!(out.contains("1000 bytes omitted"), "{out}");
        assert!(out.contains("1200 bytes in total"), "{out}");
        // The marker line aside, shown lines and omitted lines add up to the output's.
        let text: String = (1..=2000).map(|n| format!("{n}\n")).collect();
        let out = truncate_middle(&text, 600);
        let shown = out.lines().count() as u64 - 1;
        assert_eq!(shown + omitted_lines(&out), 2000, "{out}");
        let mut streamed = HeadTail::new(600);
        for chunk in text.as_bytes().chunks(7) {
            streamed.push(chunk);
        }
        let out = streamed.into_text();
        let shown = out.lines().count() as u64 - 1;
        assert_eq!(shown + omitted_lines(&out), 2000, "{out}");
        assert!(!out.contains("bb"));
    }

    #[test]
    fn truncation_never_splits_a_character() {
        let text = "é".repeat(1000); // two bytes each
        for budget in [1, 3, 99, 101, 555] {
            let out = truncate_middle(&text, budget);
            assert!(out.contains("2000 bytes in total"));
            assert!(out.len() < budget + 100);
        }
    }

    #[test]
    fn line_truncation_counts_characters() {
        assert_eq!(truncate_line("abc", 3), "abc");
        let cut = truncate_line("ééééé", 2);
        assert!(cut.starts_with("éé…"), "{cut}");
        assert!(cut.contains("2 of 5"));
    }

    #[test]
    fn head_tail_matches_truncate_middle_in_any_chunking() {
        let text: String = (0..5000).map(|i| format!("line {i} ü\n")).collect();
        let expected = truncate_middle(&text, 1000);
        for chunk in [1, 7, 64, 4096, 100_000] {
            let mut collector = HeadTail::new(1000);
            for piece in text.as_bytes().chunks(chunk) {
                collector.push(piece);
            }
            assert_eq!(collector.total_bytes(), text.len() as u64);
            assert_eq!(collector.into_text(), expected, "chunk size {chunk}");
        }
    }

    #[test]
    fn head_tail_keeps_everything_under_budget() {
        let mut collector = HeadTail::new(100);
        collector.push(b"hello ");
        collector.push(b"world");
        assert_eq!(collector.into_text(), "hello world");
    }
}
