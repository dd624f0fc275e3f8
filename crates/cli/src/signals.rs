//! Signals that end troupe: its tool processes end first, then troupe exits with the
//! conventional code (128 + the signal number).
//!
//! A teammate process asks for a gentler end ([`on_first_signal`]): the first signal tells its
//! member to stop at the round boundary, and only a second one exits at once.
//!
//! The signals are blocked in every thread and taken by one thread of their own with
//! `sigwait`, so ending does not depend on the async runtime still running, and nothing else
//! sees them. (Children start with an empty signal mask: the standard library resets it.)
//!
//! The signal calls (masks, `sigwait`, dispositions) are libc's: rustix offers them only in
//! its `runtime` module, unsafe and meant for language runtimes, so it would not remove an
//! `unsafe` block here.

use anyhow::{bail, Result};
use crossterm::event::DisableBracketedPaste;
use crossterm::Command as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// What Ctrl-C (SIGINT) means for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtrlC {
    /// It ends troupe (headless runs, teammate processes).
    Ends,
    /// The REPL handles it (it interrupts the current turn).
    Interrupts,
}

/// Set once a signal is ending troupe; the main thread then leaves the exit to that thread.
static ENDING: AtomicBool = AtomicBool::new(false);

/// What the first signal does instead of ending troupe at once, when something asked for a
/// graceful end ([`on_first_signal`]).
type Graceful = Box<dyn FnOnce() + Send>;
static GRACEFUL: Mutex<Option<Graceful>> = Mutex::new(None);

/// Makes the first termination signal call `end` instead of exiting: a teammate process then
/// ends its member at the next round boundary and exits by itself. A second signal ends troupe
/// at once, as without this.
pub fn on_first_signal(end: impl FnOnce() + Send + 'static) {
    if let Ok(mut graceful) = GRACEFUL.lock() {
        *graceful = Some(Box::new(end));
    }
}

/// What the first Ctrl-C does instead of ending troupe, when a run asked for it
/// ([`on_first_interrupt`]).
static INTERRUPT: Mutex<Option<Graceful>> = Mutex::new(None);

/// Makes the first SIGINT call `interrupt` instead of exiting: `-p` then interrupts its turn
/// and still prints its result. A second SIGINT (or any other signal) ends troupe at once.
pub fn on_first_interrupt(interrupt: impl FnOnce() + Send + 'static) {
    if let Ok(mut slot) = INTERRUPT.lock() {
        *slot = Some(Box::new(interrupt));
    }
}

/// Takes over SIGTERM and SIGHUP (and SIGINT when it `Ends` the run): on one, every tool call's
/// processes are ended, the terminal is put back as it was, and troupe exits. Call before any
/// other thread is started, so they all inherit the blocked mask.
pub fn install(ctrl_c: CtrlC) -> Result<()> {
    let mut signals = vec![libc::SIGTERM, libc::SIGHUP];
    if ctrl_c == CtrlC::Ends {
        signals.push(libc::SIGINT);
    }
    let set = block(&signals)?;
    let terminal = Terminal::save();
    std::thread::Builder::new()
        .name("troupe-signals".into())
        .spawn(move || loop {
            let mut signo: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set and `signo` a valid out pointer.
            if unsafe { libc::sigwait(&set, &mut signo) } != 0 {
                continue;
            }
            let first_interrupt = match signo {
                libc::SIGINT => INTERRUPT.lock().ok().and_then(|mut i| i.take()),
                _ => None,
            };
            if let Some(interrupt) = first_interrupt {
                interrupt();
                continue;
            }
            if let Some(end) = GRACEFUL.lock().ok().and_then(|mut g| g.take()) {
                end();
                continue;
            }
            ENDING.store(true, Ordering::SeqCst);
            terminal.restore();
            troupe_tools::process::end_all();
            std::process::exit(128 + signo);
        })?;
    Ok(())
}

/// `true`: a write to a closed pipe ends troupe by SIGPIPE (exit status 141 in a shell), as
/// it ends any Unix filter. `false`: the signal is ignored and the write fails with `EPIPE`,
/// for runs that must end their tool processes first (their output ignores a failed write).
/// Commands troupe starts get the default disposition either way (the standard library resets
/// it in the child).
pub fn pipe_ends_quietly(quietly: bool) {
    let disposition = if quietly {
        libc::SIG_DFL
    } else {
        libc::SIG_IGN
    };
    // SAFETY: setting a signal's disposition to a constant handler touches no memory of ours.
    unsafe { libc::signal(libc::SIGPIPE, disposition) };
}

/// Exits with `code`, unless a signal is already ending troupe: then that thread exits, with
/// the signal's code, once the tool processes are gone.
pub fn exit(code: i32) -> ! {
    if ENDING.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    std::process::exit(code)
}

/// Blocks `signals` in this thread (and every thread it starts later).
fn block(signals: &[libc::c_int]) -> Result<libc::sigset_t> {
    // SAFETY: the set is initialised by sigemptyset before use; sigaddset and pthread_sigmask
    // only read and write it and the thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in signals {
            libc::sigaddset(&mut set, *signal);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            bail!("could not block termination signals");
        }
        Ok(set)
    }
}

/// The terminal settings of stdin when troupe started, so a signal that arrives while the line
/// editor has the terminal in raw mode does not leave it that way.
struct Terminal(Option<rustix::termios::Termios>);

impl Terminal {
    fn save() -> Terminal {
        let stdin = std::io::stdin();
        if !rustix::termios::isatty(&stdin) {
            return Terminal(None);
        }
        Terminal(rustix::termios::tcgetattr(&stdin).ok())
    }

    fn restore(&self) {
        if let Some(termios) = &self.0 {
            // The REPL's editor turns bracketed paste on; the shell after troupe wants it off.
            // Written straight to fd 1 (not through std's buffer, which another thread may hold);
            // a failed write changes nothing.
            let stdout = std::io::stdout();
            let mut off = String::new();
            if rustix::termios::isatty(&stdout)
                && DisableBracketedPaste.write_ansi(&mut off).is_ok()
            {
                let _ = rustix::io::write(&stdout, off.as_bytes());
            }
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                termios,
            );
        }
    }
}
