//! A foreground `bash` call that runs past the agent's threshold is moved to the background as
//! it runs: its shell, output pipe and process guard are handed over, what it printed so far
//! starts its log, and the rest is copied there as it comes.

use super::{spawn, Entry, JobError, JobSnapshot, JobStatus, Jobs};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A foreground call being moved to the background, as it runs.
pub(crate) struct Handover {
    /// Its command line.
    pub(crate) command: String,
    /// Its description.
    pub(crate) description: Option<String>,
    /// When it started.
    pub(crate) started_ms: u64,
    /// Its shell.
    pub(crate) child: crate::process::MarkedChild,
    /// Its output pipe.
    pub(crate) receiver: tokio::net::unix::pipe::Receiver,
    /// What ends its processes.
    pub(crate) guard: crate::bash::CallGuard,
    /// What it printed so far (head and tail under the budget).
    pub(crate) so_far: String,
    /// What remains of its timeout.
    pub(crate) timeout: Option<Duration>,
}

impl Jobs {
    /// After how long a foreground `bash` call is moved to the background (`None`: never).
    pub fn auto_background(&self) -> Option<Duration> {
        match self.inner.auto_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Moves foreground calls that run longer than `after` to the background (`None`: never).
    pub fn set_auto_background(&self, after: Option<Duration>) {
        let ms = after.map_or(0, |d| (d.as_millis() as u64).max(1));
        self.inner.auto_ms.store(ms, Ordering::Relaxed);
    }

    /// Takes over a foreground call that ran past [`Jobs::auto_background`]: what it printed so
    /// far goes to a new log, the rest follows as it comes, and it is a job like any other
    /// (`timeout` is what remains of the call's). On an error the call's processes are ended.
    pub(crate) fn adopt(&self, handover: Handover) -> Result<JobSnapshot, JobError> {
        let (id, log) = self.next_log()?;
        let mut file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&log)
            .map_err(JobError::io(format!("creating {}", log.display())))?;
        std::io::Write::write_all(&mut file, handover.so_far.as_bytes())
            .map_err(JobError::io(format!("writing {}", log.display())))?;
        let stop = Arc::new(Notify::new());
        let job = JobSnapshot {
            id: id.clone(),
            command: handover.command,
            description: handover.description,
            status: JobStatus::Running,
            started_ms: handover.started_ms,
            ended_ms: None,
            log,
            unreported: false,
        };
        self.state().jobs.push(Entry {
            job: job.clone(),
            // The call's result showed what it printed so far.
            read: handover.so_far.len() as u64,
            stop: stop.clone(),
            kill_requested: false,
        });
        let waiter = spawn::Waiter {
            child: handover.child,
            guard: handover.guard,
            stop,
            timeout: handover.timeout,
            jobs: Arc::downgrade(&self.inner),
            id,
            pump: Some((handover.receiver, file)),
        };
        tokio::spawn(waiter.run());
        self.bump();
        Ok(job)
    }
}
