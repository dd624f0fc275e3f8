//! Durable local files, the one way troupe writes state that must survive a killed process or a
//! power loss: atomic whole-file replacement ([`atomic`]), lock files and whole-file locks
//! ([`lock`]), append-only JSON-lines logs read back line by line with torn lines reported, not
//! fatal ([`jsonl`]), and the process-wide group commit that shares one sync among every writer
//! of a file ([`commit`]).
//!
//! It knows files and nothing else: not teams, mailboxes, agents or servers. The team store's
//! file backend, agent transcripts and sessions, cron and the worktree index build on it.

pub mod atomic;
pub mod commit;
pub mod jsonl;
pub mod lock;

use std::path::PathBuf;

/// How hard a write works to survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync every append and whole-file update (the default; survives power loss).
    #[default]
    Fsync,
    /// Leave data in the OS page cache: still safe against a killed process, not against a
    /// power loss. For tests and throwaway teams.
    OsBuffered,
}

/// A line that could not be parsed; it is skipped and reported, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptLine {
    /// Where the line is, in the backend's terms (the byte offset in a file), for people to
    /// find it.
    pub offset: u64,
    /// The line's text (lossy UTF-8, shortened when long).
    pub text: String,
    /// Why it did not parse.
    pub error: String,
}

/// A file operation that failed: what was being done, to which file, and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("could not {action} {}: {source} (check that the directory exists and is writable)", path.display())]
pub struct DurableError {
    /// What was being done ("append to", "read", "lock", ...).
    pub action: &'static str,
    /// The file or directory involved.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

impl DurableError {
    /// Wraps an I/O error with the action and path it concerns.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> DurableError {
        let path = path.into();
        move |source| DurableError {
            action,
            path,
            source,
        }
    }
}
