//! Ctrl-R at the prompt: a search back through the history, as in a shell. What is typed
//! filters (the newest entry holding it, ignoring case, is shown); Ctrl-R again shows the next
//! older one; Enter puts the match on the line to edit or send; Esc or Ctrl-G gives back the
//! line as it was. Any other key takes the match and then does what it does.

use super::line::Line;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A search in progress.
#[derive(Debug, Clone)]
pub struct Search {
    query: String,
    /// The entry shown (an index into the history), if any matched.
    at: Option<usize>,
    /// Whether the last step found nothing (the earlier match stays shown).
    failing: bool,
    /// The line before the search, given back when it is cancelled.
    saved: Line,
}

/// What a key did to the search.
#[derive(Debug, Clone)]
pub enum Step {
    /// The search goes on.
    Searching,
    /// It ended; the line is `Line` (the match, or the line as it was).
    Done(Line),
    /// It ended with the match on the line, and the key is to be handled as usual.
    DoneThenKey(Line),
}

impl Search {
    /// A search started at `saved` (the line being edited), showing the newest entry.
    pub fn new(saved: Line, entries: &[String]) -> Search {
        let mut search = Search {
            query: String::new(),
            at: None,
            failing: false,
            saved,
        };
        search.find(entries, entries.len());
        search
    }

    /// Ends the search, giving back the line as it was.
    pub fn cancel(self) -> Line {
        self.saved
    }

    /// Handles `key` over the history `entries` (oldest first).
    pub fn key(&mut self, key: KeyEvent, entries: &[String]) -> Step {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => {
                let before = self.at.unwrap_or(entries.len());
                self.find(entries, before);
            }
            KeyCode::Char('g' | 'c') if ctrl => return Step::Done(self.saved.clone()),
            KeyCode::Esc => return Step::Done(self.saved.clone()),
            KeyCode::Enter => return Step::Done(self.taken(entries)),
            KeyCode::Backspace => {
                self.query.pop();
                self.find(entries, entries.len());
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                // The match shown still holds the longer text, or an older one does.
                let from = self.at.map_or(entries.len(), |i| i + 1);
                self.find(entries, from);
            }
            _ => return Step::DoneThenKey(self.taken(entries)),
        }
        Step::Searching
    }

    /// Shows the newest entry before `before` that holds the query; when none does, the
    /// search is failing and the match shown stays.
    fn find(&mut self, entries: &[String], before: usize) {
        let query = self.query.to_lowercase();
        let found = entries[..before.min(entries.len())]
            .iter()
            .rposition(|e| e.to_lowercase().contains(&query));
        self.failing = found.is_none();
        if found.is_some() {
            self.at = found;
        }
        if self.query.is_empty() && found.is_none() {
            self.at = None;
        }
    }

    /// The line the search leaves: the match, or the line as it was when nothing matched.
    fn taken(&self, entries: &[String]) -> Line {
        match self.at.and_then(|i| entries.get(i)) {
            Some(entry) => {
                let mut line = Line::default();
                line.set(entry);
                line
            }
            None => self.saved.clone(),
        }
    }

    /// The prompt (`(reverse-i-search)'query': `) and the line it shows.
    pub fn shown(&self, entries: &[String]) -> (String, Line) {
        let failing = if self.failing { "failing " } else { "" };
        let prompt = format!(
            "({failing}reverse-i-search)'{}': ",
            crate::sanitize::terminal(&self.query)
        );
        let mut line = Line::default();
        if let Some(entry) = self.at.and_then(|i| entries.get(i)) {
            line.set(entry);
        }
        (prompt, line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<String> {
        ["cargo test", "git status", "cargo build", "echo Cargo"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn shown(s: &Search) -> (String, String) {
        let (prompt, line) = s.shown(&entries());
        (prompt, line.text())
    }

    #[test]
    fn typing_filters_and_ctrl_r_goes_older() {
        let e = entries();
        let mut s = Search::new(Line::default(), &e);
        for c in "cargo".chars() {
            s.key(key(KeyCode::Char(c)), &e);
        }
        assert_eq!(
            shown(&s),
            ("(reverse-i-search)'cargo': ".into(), "echo Cargo".into())
        );
        s.key(ctrl('r'), &e);
        assert_eq!(shown(&s).1, "cargo build");
        s.key(ctrl('r'), &e);
        assert_eq!(shown(&s).1, "cargo test");
        s.key(ctrl('r'), &e);
        assert_eq!(
            shown(&s),
            (
                "(failing reverse-i-search)'cargo': ".into(),
                "cargo test".into()
            )
        );
        match s.key(key(KeyCode::Enter), &e) {
            Step::Done(line) => assert_eq!(line.text(), "cargo test"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn typing_more_narrows_and_cancelling_gives_the_line_back() {
        let e = entries();
        let mut draft = Line::default();
        draft.insert("half typed");
        let mut s = Search::new(draft, &e);
        s.key(key(KeyCode::Char('t')), &e);
        assert_eq!(shown(&s).1, "git status");
        s.key(key(KeyCode::Char('e')), &e);
        assert_eq!(shown(&s).1, "cargo test");
        s.key(key(KeyCode::Backspace), &e);
        assert_eq!(shown(&s).1, "git status");
        match s.clone().key(ctrl('g'), &e) {
            Step::Done(line) => assert_eq!(line.text(), "half typed"),
            other => panic!("{other:?}"),
        }
        match s.key(key(KeyCode::Left), &e) {
            Step::DoneThenKey(line) => assert_eq!(line.text(), "git status"),
            other => panic!("{other:?}"),
        }
    }
}
