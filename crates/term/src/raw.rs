//! The terminal mode of the REPL: keys arrive one at a time and unechoed (the editor draws
//! them), Ctrl-C and Ctrl-Z arrive as keys, Enter as `\r` — but output processing stays on, so
//! a `\n` printed by anyone still starts a new line. Bracketed paste is turned on, so a paste
//! arrives whole and its newlines do not submit it. Everything is put back when the guard goes
//! (and by the signal thread, which restores the settings saved at start, on a fatal signal).
//!
//! Not crossterm's raw mode: that turns output processing off too.

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use rustix::termios::{
    tcgetattr, tcsetattr, InputModes, LocalModes, OptionalActions, SpecialCodeIndex, Termios,
};

/// The terminal in the REPL's mode until dropped.
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Switches stdin's terminal to the REPL's mode.
    pub fn enable() -> std::io::Result<RawMode> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        raw.local_modes &=
            !(LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG | LocalModes::IEXTEN);
        raw.input_modes &=
            !(InputModes::ICRNL | InputModes::IXON | InputModes::INLCR | InputModes::IGNCR);
        raw.special_codes[SpecialCodeIndex::VMIN] = 1;
        raw.special_codes[SpecialCodeIndex::VTIME] = 0;
        // Now, not after a flush: keys typed before the prompt appeared are kept.
        tcsetattr(&stdin, OptionalActions::Now, &raw)?;
        let _ = crossterm::execute!(std::io::stdout().lock(), EnableBracketedPaste);
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::execute!(std::io::stdout().lock(), DisableBracketedPaste);
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}
