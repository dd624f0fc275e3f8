//! A question answered from a short numbered list, as Claude Code asks for permission: Up and
//! Down move the highlight, Enter takes it, a choice's number answers at once, Esc takes the
//! refusal. A choice may ask for a few words more (what to do instead), typed on a line of its
//! own before the answer goes. Letters are typed on a `?` line under the list and Enter sends
//! them as the answer (`y`, `n`…, as before the list): a word typed when the question appeared
//! never answers it by its first letter.
//!
//! Whoever asks offers the menu with the question's text ([`super::Printer::offer`]); the
//! editor shows it in place of the `?` prompt when that text is printed and an answer asked
//! for, so the REPL's loop only prints the question and waits for the answer, as for any other.

use super::editor::fit;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use crossterm::style::Stylize;

/// One choice of a menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What the list shows (after the number).
    pub label: String,
    /// The answer it sends.
    pub answer: String,
    /// Whether taking it asks for a line of text, sent after the answer and a newline.
    pub tell: bool,
}

/// The choices offered with a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Menu {
    /// In the order shown (the first highlighted at first).
    pub choices: Vec<Choice>,
    /// The choice Esc takes (without asking for text).
    pub escape: usize,
    /// What the line for the text says (`what should the agent do instead?`).
    pub tell_label: String,
}

/// What a key did to a menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to send yet (the highlight moved, or the key means nothing here).
    Stay,
    /// Send this answer; `echo` is the line left on the screen in place of the menu.
    Answer { answer: String, echo: String },
    /// The choice asks for text: the line now takes it.
    Tell,
    /// Not the menu's key (Ctrl-C, or an edit of the text typed).
    Pass,
}

/// A menu being answered.
#[derive(Debug, Clone)]
pub struct Asking {
    menu: Menu,
    highlight: usize,
    /// The choice that asked for text, while it is typed.
    telling: Option<usize>,
}

impl Asking {
    /// The menu with its first choice highlighted.
    pub fn new(menu: Menu) -> Asking {
        Asking {
            menu,
            highlight: 0,
            telling: None,
        }
    }

    /// Handles `key`; `line` is the text typed (an answer, or what a choice asks for).
    pub fn key(&mut self, key: KeyEvent, line: &str) -> Step {
        if key.modifiers.contains(KeyModifiers::CONTROL) {
            return Step::Pass;
        }
        if let Some(i) = self.telling {
            return match key.code {
                KeyCode::Enter => self.answer(i, line.trim()),
                KeyCode::Esc => self.answer(i, ""),
                _ => Step::Pass,
            };
        }
        let count = self.menu.choices.len();
        match key.code {
            KeyCode::Up => self.highlight = (self.highlight + count - 1) % count,
            KeyCode::Down | KeyCode::Tab => self.highlight = (self.highlight + 1) % count,
            KeyCode::BackTab => self.highlight = (self.highlight + count - 1) % count,
            KeyCode::Enter if !line.trim().is_empty() => {
                return Step::Answer {
                    answer: line.trim().to_string(),
                    echo: format!("  ❯ {}", line.trim()),
                }
            }
            KeyCode::Enter => return self.take(self.highlight),
            KeyCode::Esc => return self.answer(self.menu.escape, ""),
            KeyCode::Char(c) if line.is_empty() && c.is_ascii_digit() => {
                match (c as usize).checked_sub('1' as usize) {
                    Some(i) if i < count => return self.take(i),
                    _ => {}
                }
            }
            KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete => return Step::Pass,
            KeyCode::Left | KeyCode::Right | KeyCode::Home | KeyCode::End => return Step::Pass,
            _ => {}
        }
        Step::Stay
    }

    /// Takes choice `i`: its answer, or the line for its text.
    fn take(&mut self, i: usize) -> Step {
        self.highlight = i;
        if self.menu.choices[i].tell {
            self.telling = Some(i);
            return Step::Tell;
        }
        self.answer(i, "")
    }

    fn answer(&self, i: usize, told: &str) -> Step {
        let choice = &self.menu.choices[i];
        let mut echo = format!("  ❯ {}. {}", i + 1, choice.label);
        let mut answer = choice.answer.clone();
        if !told.is_empty() {
            echo = format!("  ❯ {}. {}: {told}", i + 1, short(&choice.label));
            answer = format!("{answer}\n{told}");
        }
        Step::Answer { answer, echo }
    }

    /// The rows to draw, cut to `cols` columns; when text is typed (`typed`) or a choice asks
    /// for it, the prompt of the line it is typed on (drawn below them).
    pub fn rows(
        &self,
        colour: bool,
        cols: usize,
        typed: bool,
    ) -> (Vec<String>, Option<&'static str>) {
        if let Some(i) = self.telling {
            let choice = short(&self.menu.choices[i].label);
            let label = format!("  {}. {choice} {}", i + 1, self.menu.tell_label);
            return (vec![fit(&label, cols)], Some(TELL_PROMPT));
        }
        let rows = self
            .menu
            .choices
            .iter()
            .enumerate()
            .map(|(i, choice)| {
                let esc = if i == self.menu.escape { " (esc)" } else { "" };
                let mark = if i == self.highlight { "❯" } else { " " };
                let text = fit(&format!("{mark} {}. {}{esc}", i + 1, choice.label), cols);
                match i == self.highlight && colour {
                    true => format!("{}", text.cyan().bold()),
                    false => text,
                }
            })
            .collect();
        (rows, typed.then_some("? "))
    }
}

/// The prompt of the line where a choice's text is typed.
pub const TELL_PROMPT: &str = "↳ ";

/// A label up to its first comma (`No, and tell …` → `No`).
fn short(label: &str) -> &str {
    label.split(',').next().unwrap_or(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn menu() -> Menu {
        let choice = |label: &str, answer: &str, tell| Choice {
            label: label.into(),
            answer: answer.into(),
            tell,
        };
        Menu {
            choices: vec![
                choice("Yes", "y", false),
                choice("Yes, and don't ask again for \"ls:*\"", "a", false),
                choice("No, and tell the agent what to do differently", "n", true),
            ],
            escape: 2,
            tell_label: "— what should it do instead?".into(),
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn answer(step: Step) -> String {
        match step {
            Step::Answer { answer, .. } => answer,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arrows_move_the_highlight_and_enter_takes_it() {
        let mut m = Asking::new(menu());
        assert_eq!(answer(m.clone().key(key(KeyCode::Enter), "")), "y");
        assert_eq!(m.key(key(KeyCode::Down), ""), Step::Stay);
        assert!(m.rows(false, 80, false).0[1].starts_with("❯ 2. Yes, and don't ask again"));
        assert_eq!(answer(m.clone().key(key(KeyCode::Enter), "")), "a");
        m.key(key(KeyCode::Up), "");
        m.key(key(KeyCode::Up), "");
        assert!(
            m.rows(false, 80, false).0[2].starts_with("❯ 3. No"),
            "wraps round"
        );
    }

    #[test]
    fn numbers_answer_at_once_letters_wait_for_enter_and_esc_refuses() {
        let m = Asking::new(menu());
        assert_eq!(answer(m.clone().key(key(KeyCode::Char('1')), "")), "y");
        assert_eq!(answer(m.clone().key(key(KeyCode::Char('2')), "")), "a");
        assert_eq!(answer(m.clone().key(key(KeyCode::Esc), "")), "n");
        assert_eq!(m.clone().key(key(KeyCode::Char('9')), ""), Step::Stay);
        // A letter is typed on the line; Enter sends what is typed.
        assert_eq!(m.clone().key(key(KeyCode::Char('a')), ""), Step::Pass);
        assert_eq!(m.clone().key(key(KeyCode::Char('1')), "a"), Step::Pass);
        assert_eq!(answer(m.clone().key(key(KeyCode::Enter), " r ")), "r");
        assert_eq!(m.rows(false, 80, true).1, Some("? "));
        assert_eq!(m.rows(false, 80, false).1, None);
    }

    #[test]
    fn the_refusal_takes_what_to_do_instead() {
        let mut m = Asking::new(menu());
        assert_eq!(m.key(key(KeyCode::Char('3')), ""), Step::Tell);
        assert_eq!(m.rows(false, 80, false).1, Some(TELL_PROMPT));
        assert_eq!(m.key(key(KeyCode::Char('x')), ""), Step::Pass);
        match m.clone().key(key(KeyCode::Enter), " use rg ") {
            Step::Answer { answer, echo } => {
                assert_eq!(answer, "n\nuse rg");
                assert_eq!(echo, "  ❯ 3. No: use rg");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(answer(m.key(key(KeyCode::Esc), "typed")), "n");
    }
}
