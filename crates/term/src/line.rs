//! The text being typed at the prompt: a buffer of characters with a cursor, the edits a shell
//! prompt offers, and Up/Down through the history (the draft kept while browsing).

use unicode_width::UnicodeWidthChar;

/// One line being edited (it may hold newlines, from a bracketed paste).
#[derive(Debug, Default, Clone)]
pub struct Line {
    chars: Vec<char>,
    cursor: usize,
}

impl Line {
    /// The text as typed.
    pub fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// The cursor position, in characters.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The characters.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// Replaces the text, cursor at the end.
    pub fn set(&mut self, text: &str) {
        self.chars = text.chars().collect();
        self.cursor = self.chars.len();
    }

    /// Empties the line and returns what it held.
    pub fn take(&mut self) -> String {
        let text = self.text();
        self.set("");
        text
    }

    /// Inserts text at the cursor (a paste's `\r\n` and `\r` become newlines).
    pub fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            self.chars.insert(self.cursor, c);
            self.cursor += 1;
        }
    }

    /// Backspace: the character before the cursor.
    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.cursor -= 1;
            self.chars.remove(self.cursor);
        }
    }

    /// Delete: the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.chars.len() {
            self.chars.remove(self.cursor);
        }
    }

    /// Moves one character left.
    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    /// Moves one character right.
    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.chars.len());
    }

    /// Moves to the start.
    pub fn home(&mut self) {
        self.cursor = 0;
    }

    /// Moves to the end.
    pub fn end(&mut self) {
        self.cursor = self.chars.len();
    }

    /// Puts the cursor at `at` (at most the end).
    pub fn move_to(&mut self, at: usize) {
        self.cursor = at.min(self.chars.len());
    }

    /// Ctrl-U: deletes from the start of the line to the cursor.
    pub fn kill_to_start(&mut self) {
        self.chars.drain(..self.cursor);
        self.cursor = 0;
    }

    /// Ctrl-K: deletes from the cursor to the end.
    pub fn kill_to_end(&mut self) {
        self.chars.truncate(self.cursor);
    }

    /// Ctrl-W: deletes the word before the cursor (and the blanks after it).
    pub fn kill_word(&mut self) {
        let mut start = self.cursor;
        while start > 0 && self.chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !self.chars[start - 1].is_whitespace() {
            start -= 1;
        }
        self.chars.drain(start..self.cursor);
        self.cursor = start;
    }
}

/// How a character of the line is shown: a newline as `↵`, a tab as a space, any other control
/// character as `�` (the line never writes a control character to the terminal).
pub fn shown(c: char) -> char {
    match c {
        '\n' => '↵',
        '\t' => ' ',
        c if c.is_control() => '\u{fffd}',
        c => c,
    }
}

/// The columns a shown character takes (wide characters two; never zero, so the cursor
/// always moves).
pub fn width(c: char) -> usize {
    shown(c).width().unwrap_or(1).max(1)
}

/// The part of a line that fits in `avail` columns with the cursor in view: the first shown
/// character, the text to draw, and the cursor's column within it.
pub fn window(line: &Line, avail: usize) -> (String, usize) {
    let chars = line.chars();
    let cursor = line.cursor();
    let avail = avail.max(2);
    // Scroll just far enough that the cursor (and one column for it) fits.
    let mut start = 0;
    let mut before: usize = chars[..cursor].iter().map(|&c| width(c)).sum();
    while before + 1 > avail && start < cursor {
        before -= width(chars[start]);
        start += 1;
    }
    let mut text = String::new();
    let mut used = 0;
    for &c in &chars[start..] {
        let w = width(c);
        if used + w > avail {
            break;
        }
        text.push(shown(c));
        used += w;
    }
    (text, before)
}

/// The history: earlier lines, oldest first, and where Up/Down has got to.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// The entry being shown, when browsing.
    at: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
}

/// At most this many entries are kept.
const MAX_ENTRIES: usize = 1000;

impl History {
    /// A history holding `entries`, oldest first.
    pub fn new(entries: Vec<String>) -> History {
        History {
            entries,
            at: None,
            draft: String::new(),
        }
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a submitted line (not blank, not a repeat of the last) and stops browsing.
    pub fn add(&mut self, line: &str) {
        self.at = None;
        if line.trim().is_empty() || self.entries.last().is_some_and(|l| l == line) {
            return;
        }
        self.entries.push(line.to_string());
        if self.entries.len() > MAX_ENTRIES {
            self.entries.remove(0);
        }
    }

    /// Stops browsing (the line was edited or cleared).
    pub fn reset(&mut self) {
        self.at = None;
    }

    /// Up: the previous entry replaces the line.
    pub fn up(&mut self, line: &mut Line) {
        let next = match self.at {
            None if self.entries.is_empty() => return,
            None => {
                self.draft = line.text();
                self.entries.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.at = Some(next);
        line.set(&self.entries[next]);
    }

    /// Down: the next entry, or back to the draft after the newest.
    pub fn down(&mut self, line: &mut Line) {
        match self.at {
            None => {}
            Some(i) if i + 1 < self.entries.len() => {
                self.at = Some(i + 1);
                line.set(&self.entries[i + 1]);
            }
            Some(_) => {
                self.at = None;
                let draft = std::mem::take(&mut self.draft);
                line.set(&draft);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line {
        let mut l = Line::default();
        l.insert(text);
        l
    }

    #[test]
    fn edits_at_the_cursor() {
        let mut l = line("hello world");
        l.home();
        l.right();
        l.delete();
        assert_eq!(l.text(), "hllo world");
        l.end();
        l.backspace();
        l.left();
        l.insert("X");
        assert_eq!(l.text(), "hllo worXl");
        l.kill_word();
        assert_eq!(l.text(), "hllo l");
        l.kill_to_start();
        assert_eq!((l.text().as_str(), l.cursor()), ("l", 0));
        l.end();
        l.insert(" more");
        l.home();
        l.right();
        l.kill_to_end();
        assert_eq!(l.text(), "l");
    }

    #[test]
    fn a_paste_keeps_its_newlines() {
        let l = line("one\r\ntwo\rthree\n");
        assert_eq!(l.text(), "one\ntwo\nthree\n");
    }

    #[test]
    fn history_browses_and_returns_to_the_draft() {
        let mut h = History::new(vec!["first".into(), "second".into()]);
        let mut l = line("draft");
        h.up(&mut l);
        assert_eq!(l.text(), "second");
        h.up(&mut l);
        h.up(&mut l);
        assert_eq!(l.text(), "first");
        h.down(&mut l);
        assert_eq!(l.text(), "second");
        h.down(&mut l);
        assert_eq!(l.text(), "draft");
        h.add("second");
        h.add("  ");
        h.add("third");
        assert_eq!(h.entries(), ["first", "second", "third"]);
    }

    #[test]
    fn the_window_keeps_the_cursor_in_view_and_counts_wide_characters() {
        let l = line("日本語です");
        let (text, col) = window(&l, 40);
        assert_eq!((text.as_str(), col), ("日本語です", 10));
        let (text, col) = window(&l, 6);
        assert!(col < 6, "{col}");
        assert!(text.ends_with('す'), "{text}");
        let mut l = line("abcdefghij");
        l.home();
        let (text, col) = window(&l, 4);
        assert_eq!((text.as_str(), col), ("abcd", 0));
        assert_eq!(window(&line("a\nb\u{1b}"), 10).0, "a↵b\u{fffd}");
    }
}
