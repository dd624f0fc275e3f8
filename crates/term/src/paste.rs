//! Large pastes, as Claude Code shows them: a bracketed paste of more than ten lines or a
//! thousand characters stands in the line (and in the history) as `[Pasted text #N +L lines]`,
//! and the text itself takes its place when the line is sent. The texts are kept for the
//! session, so a line recalled from the history sends its paste again; numbering starts past
//! the numbers the history already holds, so an old entry never names a new paste.

use std::collections::HashMap;

/// A paste with more lines than this is shown as a placeholder.
const MAX_LINES: usize = 10;
/// Nor more characters than this.
const MAX_CHARS: usize = 1000;

/// The session's large pastes.
#[derive(Debug, Default)]
pub struct Pastes {
    /// Placeholder → the text it stands for.
    texts: HashMap<String, String>,
    /// The number of the next paste.
    next: usize,
    /// The image files pasted as paths.
    images: super::image_paste::PastedImages,
}

impl Pastes {
    /// Pastes numbered past those named in `history`.
    pub fn new(history: &[String], images: super::image_paste::PastedImages) -> Pastes {
        images.start_past(history);
        let highest = history
            .iter()
            .flat_map(|entry| entry.match_indices(PREFIX).map(move |(i, _)| &entry[i..]))
            .filter_map(|rest| {
                let digits: String = rest[PREFIX.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse::<usize>().ok()
            })
            .max()
            .unwrap_or(0);
        Pastes {
            texts: HashMap::new(),
            next: highest + 1,
            images,
        }
    }

    /// What a paste of `text` puts in the line: the text itself (its image files' paths as
    /// `[Image #N]`) when it is short, else a placeholder that stands for it.
    pub fn insert(&mut self, text: &str) -> String {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let text = self.images.replace_paths(&text);
        let lines = text.lines().count();
        if lines <= MAX_LINES && text.chars().count() <= MAX_CHARS {
            return text;
        }
        let placeholder = format!("{PREFIX}{} +{lines} lines]", self.next);
        self.next += 1;
        self.texts.insert(placeholder.clone(), text);
        placeholder
    }

    /// `line` with each placeholder of this session replaced by its text.
    pub fn expand(&self, line: &str) -> String {
        if !line.contains(PREFIX) {
            return line.to_string();
        }
        let mut out = line.to_string();
        for (placeholder, text) in &self.texts {
            out = out.replace(placeholder.as_str(), text);
        }
        out
    }
}

/// How every placeholder starts.
const PREFIX: &str = "[Pasted text #";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_paste_is_itself_and_a_long_one_a_placeholder() {
        let mut p = Pastes::new(&[], Default::default());
        assert_eq!(p.insert("one\r\ntwo"), "one\ntwo");
        let long: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let wide = "x".repeat(1500);
        assert_eq!(p.insert(&long), "[Pasted text #1 +12 lines]");
        assert_eq!(p.insert(&wide), "[Pasted text #2 +1 lines]");
        let line = "see [Pasted text #1 +12 lines] and [Pasted text #2 +1 lines]";
        assert_eq!(p.expand(line), format!("see {long} and {wide}"));
        assert_eq!(
            p.expand("[Pasted text #9 +3 lines]"),
            "[Pasted text #9 +3 lines]"
        );
    }

    #[test]
    fn numbering_starts_past_the_history() {
        let history = vec!["fix [Pasted text #7 +20 lines] please".to_string()];
        let mut p = Pastes::new(&history, Default::default());
        let long = "a\n".repeat(11);
        assert_eq!(p.insert(&long), "[Pasted text #8 +11 lines]");
        // The old entry's paste is gone: it is sent as written.
        assert_eq!(p.expand(&history[0]), history[0]);
    }
}
