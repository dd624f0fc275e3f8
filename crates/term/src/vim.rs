//! Vim keys at the prompt (settings `"editorMode": "vim"`, or `/vim` to toggle): the prompt
//! starts each line in insert mode, where keys type as usual; Esc goes to normal mode, where
//! `h` `l` `w` `b` `0` `$` move, `x` and `dd` delete, `i` `a` `I` `A` go back to inserting.
//! Enter sends the line from either mode; Ctrl keys, arrows and Esc in normal mode do what
//! they do without vim (Esc Esc clears the line, Esc interrupts a running turn).

use super::line::Line;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns vim keys on or off.
pub fn set(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Turns vim keys on when they are off and off when on; whether they are on now.
pub fn toggle() -> bool {
    !ENABLED.fetch_xor(true, Ordering::SeqCst)
}

/// The vim state of the prompt line.
#[derive(Debug, Default)]
pub struct Vim {
    normal: bool,
    /// An operator waiting for its motion (`d`).
    pending: Option<char>,
}

impl Vim {
    /// What the prompt shows of the mode (`-- INSERT --`), when vim keys are on.
    pub fn label(&self) -> Option<&'static str> {
        match (ENABLED.load(Ordering::SeqCst), self.normal) {
            (false, _) => None,
            (true, false) => Some("-- INSERT --"),
            (true, true) => Some("-- NORMAL --"),
        }
    }

    /// Handles `key` on `line`; whether it took it (otherwise the editor handles it).
    pub fn key(&mut self, key: KeyEvent, line: &mut Line) -> bool {
        if !ENABLED.load(Ordering::SeqCst) || key.modifiers.contains(KeyModifiers::CONTROL) {
            return false;
        }
        if key.code == KeyCode::Enter {
            // Every prompt starts in insert mode.
            *self = Vim::default();
            return false;
        }
        if !self.normal {
            if key.code != KeyCode::Esc {
                return false;
            }
            self.normal = true;
            line.left();
            return true;
        }
        let pending = self.pending.take();
        let KeyCode::Char(c) = key.code else {
            // Esc, arrows, Backspace, Tab: as without vim.
            return false;
        };
        let len = line.chars().len();
        match (pending, c) {
            (Some('d'), 'd') => {
                line.take();
            }
            (Some('d'), 'w') => {
                let to = next_word(line.chars(), line.cursor());
                for _ in line.cursor()..to {
                    line.delete();
                }
            }
            (Some(_), _) => {}
            (None, 'd') => self.pending = Some('d'),
            (None, 'h') => line.left(),
            (None, 'l') if line.cursor() + 1 < len => line.right(),
            (None, 'w') => {
                let to = next_word(line.chars(), line.cursor()).min(len.saturating_sub(1));
                line.move_to(to);
            }
            (None, 'b') => line.move_to(prev_word(line.chars(), line.cursor())),
            (None, '0') => line.home(),
            (None, '$') => line.move_to(len.saturating_sub(1)),
            (None, 'x') => {
                line.delete();
                if line.cursor() > 0 && line.cursor() >= line.chars().len() {
                    line.left();
                }
            }
            (None, 'i') => self.normal = false,
            (None, 'a') => {
                line.right();
                self.normal = false;
            }
            (None, 'A') => {
                line.end();
                self.normal = false;
            }
            (None, 'I') => {
                line.home();
                self.normal = false;
            }
            // Any other key does nothing in normal mode (it never types).
            _ => {}
        }
        true
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The class of a character for word motions: blank, word, or punctuation.
fn class(c: char) -> u8 {
    match c {
        c if c.is_whitespace() => 0,
        c if is_word(c) => 1,
        _ => 2,
    }
}

/// Where `w` goes from `at`: the start of the next word.
fn next_word(chars: &[char], at: usize) -> usize {
    let mut i = at;
    if let Some(&c) = chars.get(i) {
        let start = class(c);
        while i < chars.len() && class(chars[i]) == start && start != 0 {
            i += 1;
        }
    }
    while i < chars.len() && class(chars[i]) == 0 {
        i += 1;
    }
    i
}

/// Where `b` goes from `at`: the start of this word or the one before.
fn prev_word(chars: &[char], at: usize) -> usize {
    let mut i = at;
    while i > 0 && class(chars[i - 1]) == 0 {
        i -= 1;
    }
    if i == 0 {
        return 0;
    }
    let kind = class(chars[i - 1]);
    while i > 0 && class(chars[i - 1]) == kind {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(vim: &mut Vim, line: &mut Line, keys: &str) {
        for c in keys.chars() {
            let code = match c {
                '⎋' => KeyCode::Esc,
                c => KeyCode::Char(c),
            };
            if !vim.key(KeyEvent::new(code, KeyModifiers::NONE), line) {
                if let KeyCode::Char(c) = code {
                    line.insert(c.encode_utf8(&mut [0; 4]));
                }
            }
        }
    }

    #[test]
    fn normal_mode_moves_deletes_and_goes_back_to_inserting() {
        set(true);
        let (mut vim, mut line) = (Vim::default(), Line::default());
        keys(&mut vim, &mut line, "hello big world⎋");
        assert_eq!(line.cursor(), 14);
        keys(&mut vim, &mut line, "bx");
        assert_eq!(line.text(), "hello big orld");
        keys(&mut vim, &mut line, "0wdw");
        assert_eq!(line.text(), "hello orld");
        keys(&mut vim, &mut line, "$x");
        assert_eq!(line.text(), "hello orl");
        keys(&mut vim, &mut line, "IX⎋Ay⎋hhaZ");
        assert_eq!(line.text(), "Xhello orZly");
        keys(&mut vim, &mut line, "⎋ddiq");
        assert_eq!(line.text(), "q");
        assert!(!toggle());
        keys(&mut vim, &mut line, "⎋x");
        assert_eq!(line.text(), "qx", "off: keys type");
        set(false);
    }
}
