//! The terminal mode of the REPL: keys arrive one at a time and unechoed (the editor draws
//! them), Ctrl-C and Ctrl-Z arrive as keys, Enter as `\r` — but output processing stays on, so
//! a `\n` printed by anyone still starts a new line. Bracketed paste is turned on, so a paste
//! arrives whole and its newlines do not submit it. Everything is put back when the guard goes
//! (and by the signal thread, which restores the settings saved at start, on a fatal signal).

use std::io::Write;

/// Turns bracketed paste on and off.
const PASTE_ON: &str = "\u{1b}[?2004h";
const PASTE_OFF: &str = "\u{1b}[?2004l";

/// The terminal in the REPL's mode until dropped.
pub struct RawMode {
    saved: libc::termios,
}

impl RawMode {
    /// Switches stdin's terminal to the REPL's mode.
    pub fn enable() -> std::io::Result<RawMode> {
        // SAFETY: tcgetattr fills the zeroed struct we own; tcsetattr reads our modified copy.
        unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            raw.c_iflag &= !(libc::ICRNL | libc::IXON | libc::INLCR | libc::IGNCR);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            // TCSANOW, not TCSAFLUSH: keys typed before the prompt appeared are kept.
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut out = std::io::stdout().lock();
            let _ = out
                .write_all(PASTE_ON.as_bytes())
                .and_then(|()| out.flush());
            Ok(RawMode { saved })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(PASTE_OFF.as_bytes())
            .and_then(|()| out.flush());
        // SAFETY: tcsetattr reads the settings saved by tcgetattr in `enable`.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}
