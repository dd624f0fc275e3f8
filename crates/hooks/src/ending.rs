//! How a hook's process ended, whichever way it ran.

use std::time::Duration;

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// Its timeout passed; it and its process group were killed.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}
