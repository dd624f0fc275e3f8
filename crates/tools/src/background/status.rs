//! What a background command is and how it stands, as the rest of troupe sees it.

use std::path::PathBuf;

/// How one background command stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStatus {
    /// Still running.
    Running,
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal, not by troupe.
    Signalled(i32),
    /// Its timeout (in ms) ran out and it was killed.
    TimedOut(u64),
    /// Ended on request (`kill_background`, `/bashes kill`) or because its agent ended.
    Killed,
    /// troupe lost track of it (waiting for it failed); it was killed.
    Lost(String),
}

impl JobStatus {
    /// Whether it still runs.
    pub fn is_running(&self) -> bool {
        matches!(self, JobStatus::Running)
    }

    /// The status in a few words: "running", "exited with code 0", "killed".
    pub fn describe(&self) -> String {
        match self {
            JobStatus::Running => "running".to_string(),
            JobStatus::Exited(code) => format!("exited with code {code}"),
            JobStatus::Signalled(signal) => format!(
                "killed by signal {signal} ({})",
                crate::bash::signal_name(*signal)
            ),
            JobStatus::TimedOut(ms) => format!("timed out after {ms} ms and was killed"),
            JobStatus::Killed => "killed".to_string(),
            JobStatus::Lost(why) => format!("lost ({why}) and killed"),
        }
    }

    /// The status in one word, for tables and JSON.
    pub fn word(&self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Exited(0) => "done",
            JobStatus::Exited(_) | JobStatus::Signalled(_) | JobStatus::Lost(_) => "failed",
            JobStatus::TimedOut(_) => "timed-out",
            JobStatus::Killed => "killed",
        }
    }
}

/// One background command as it stands, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSnapshot {
    /// Its id (`bg-1`), what the model passes to `bash_output` and `kill_background`.
    pub id: String,
    /// The command line.
    pub command: String,
    /// The short description the model gave, if any.
    pub description: Option<String>,
    /// Where it stands.
    pub status: JobStatus,
    /// When it started, in ms since the Unix epoch.
    pub started_ms: u64,
    /// When it ended, in ms since the Unix epoch.
    pub ended_ms: Option<u64>,
    /// Its output log (stdout and stderr interleaved).
    pub log: PathBuf,
    /// Whether the agent has yet to be told how it ended (a notification is waiting).
    pub unreported: bool,
}

/// A finished command's report, waiting to be put before the agent's next model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Position in the agent's stream of notifications, for acknowledging.
    pub seq: u64,
    /// Unique id (a ULID), so a re-delivered notification is recognised.
    pub id: String,
    /// The job it is about.
    pub job: String,
    /// What the model reads: a `<task_notification>` block.
    pub text: String,
}

/// What `bash_output` found: the job and the output it wrote since the last read.
#[derive(Debug, Clone)]
pub struct JobRead {
    /// The job as it stands.
    pub job: JobSnapshot,
    /// New output since the previous read, its head and tail kept under the output budget.
    pub output: String,
    /// Bytes of new output read in all (more than `output` holds when it was cut).
    pub bytes: u64,
}

/// Why a background command could not be started, read or killed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// No job with this id belongs to the agent.
    #[error("no background command '{id}' here; {known}")]
    Unknown {
        /// The id asked for.
        id: String,
        /// The ids there are, for the model.
        known: String,
    },
    /// The sandbox could not be prepared; the command did not run.
    #[error("the command did not run: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// troupe is exiting.
    #[error(transparent)]
    Exiting(#[from] crate::process::Exiting),
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl JobError {
    pub(super) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> JobError {
        let what = what.into();
        move |source| JobError::Io { what, source }
    }
}
