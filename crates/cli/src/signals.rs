//! Signals that end troupe: its tool processes end first, then troupe exits with the
//! conventional code (128 + the signal number).

use anyhow::{Context, Result};
use std::future::pending;
use tokio::runtime::Runtime;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// What Ctrl-C (SIGINT) means for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtrlC {
    /// It ends troupe (headless runs, teammate processes).
    Ends,
    /// The REPL handles it (it interrupts the current turn).
    Interrupts,
}

/// Listens, on `runtime`, for SIGTERM and SIGHUP (and SIGINT when it `Ends` the run). On one,
/// every tool call's processes are ended, the terminal is put back as it was, and troupe exits.
/// The handlers are in place when this returns.
pub fn install(runtime: &Runtime, ctrl_c: CtrlC) -> Result<()> {
    let _entered = runtime.enter();
    let listen = |kind: SignalKind| signal(kind).context("installing a signal handler");
    let mut term = listen(SignalKind::terminate())?;
    let mut hup = listen(SignalKind::hangup())?;
    let mut int = match ctrl_c {
        CtrlC::Ends => Some(listen(SignalKind::interrupt())?),
        CtrlC::Interrupts => None,
    };
    let terminal = Terminal::save();
    runtime.spawn(async move {
        let signo = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
            _ = maybe(&mut int) => libc::SIGINT,
        };
        terminal.restore();
        if let Err(err) = tokio::task::spawn_blocking(troupe_tools::process::end_all).await {
            tracing::warn!(error = %err, "ending tool processes");
        }
        std::process::exit(128 + signo);
    });
    Ok(())
}

/// Waits on an optional signal stream; never resolves without one.
async fn maybe(signal: &mut Option<Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => pending::<()>().await,
    }
}

/// The terminal settings of stdin when troupe started, so a signal that arrives while the line
/// editor has the terminal in raw mode does not leave it that way.
struct Terminal(Option<libc::termios>);

impl Terminal {
    fn save() -> Terminal {
        // SAFETY: isatty and tcgetattr only read fd 0's state into the zeroed struct we own.
        unsafe {
            if libc::isatty(libc::STDIN_FILENO) != 1 {
                return Terminal(None);
            }
            let mut termios: libc::termios = std::mem::zeroed();
            match libc::tcgetattr(libc::STDIN_FILENO, &mut termios) {
                0 => Terminal(Some(termios)),
                _ => Terminal(None),
            }
        }
    }

    fn restore(&self) {
        if let Some(termios) = &self.0 {
            // SAFETY: tcsetattr reads the struct saved by tcgetattr above.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, termios) };
        }
    }
}
