//! Background commands (`bash{…, run_in_background: true}`): started in the agent's sandbox
//! like any bash call, with their output going to a log file, and owned by the agent's [`Jobs`]
//! until they end, are killed (`kill_background`), or the agent ends.
//!
//! A command that finishes leaves a [`Notification`] behind; the agent crate puts it before the
//! next model call (and wakes an idle agent) the way it delivers mail. The processes are
//! registered like a foreground call's ([`crate::process::LiveCall`]), so troupe's exit ends
//! them too, however troupe ends.

mod handover;
mod log;
mod render;
mod spawn;
mod status;
mod tools;

pub(crate) use handover::Handover;
pub(crate) use log::now_ms;
use log::{highest_log_number, read_from, tail_of};
pub use render::describe_age;
pub(crate) use render::moved;
pub use status::{JobError, JobRead, JobSnapshot, JobStatus, Notification};
pub(crate) use tools::start_output;
pub use tools::{BashOutputTool, JobInput, KillBackgroundTool};

use crate::ToolContext;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// One job's bookkeeping.
#[derive(Debug)]
struct Entry {
    job: JobSnapshot,
    /// Bytes of the log `bash_output` has shown.
    read: u64,
    /// Fired to end it.
    stop: Arc<Notify>,
    /// Someone asked for it to end: its ending is no news to the agent.
    kill_requested: bool,
}

#[derive(Debug, Default)]
struct State {
    /// The number of the last job started.
    counter: u64,
    jobs: Vec<Entry>,
    pending: Vec<Notification>,
    seq: u64,
}

#[derive(Debug)]
struct Inner {
    agent: String,
    log_dir: PathBuf,
    /// Foreground calls running longer than this many ms move to the background; 0: never.
    auto_ms: AtomicU64,
    state: Mutex<State>,
    /// Bumped on every change (a job started or ended, a notification delivered).
    changes: watch::Sender<u64>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The agent is gone: nothing it started may go on running.
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for entry in &state.jobs {
            if entry.job.status.is_running() {
                entry.stop.notify_one();
            }
        }
    }
}

/// One agent's background commands. Cheap to clone (a handle); when the last handle goes (the
/// agent ends), every command still running is killed.
#[derive(Debug, Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

/// Finished jobs kept for listing; older ones are forgotten (their logs stay).
const KEEP_FINISHED: usize = 50;

impl Jobs {
    /// The background commands of `agent`, with their logs under `log_dir` (made on first use).
    /// Numbering goes on after the logs already there, so a resumed session's ids stay unique.
    pub fn new(agent: impl Into<String>, log_dir: impl Into<PathBuf>) -> Jobs {
        let log_dir = log_dir.into();
        let counter = highest_log_number(&log_dir);
        Jobs {
            inner: Arc::new(Inner {
                agent: agent.into(),
                log_dir,
                auto_ms: AtomicU64::new(0),
                state: Mutex::new(State {
                    counter,
                    ..State::default()
                }),
                changes: watch::channel(0).0,
            }),
        }
    }

    /// The agent they belong to.
    pub fn agent(&self) -> &str {
        &self.inner.agent
    }

    /// Where the logs go.
    pub fn log_dir(&self) -> &Path {
        &self.inner.log_dir
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Plain bookkeeping, consistent between statements: a panic elsewhere leaves it usable.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.inner.changes.send_modify(|n| *n += 1);
    }

    /// A receiver that sees a change whenever a job starts or ends or a notification is taken.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The next job's id (`bg-N`) and its log file in the log folder, made if missing.
    fn next_log(&self) -> Result<(String, PathBuf), JobError> {
        let number = {
            let mut state = self.state();
            state.counter += 1;
            state.counter
        };
        let id = format!("bg-{number}");
        std::fs::create_dir_all(&self.inner.log_dir).map_err(JobError::io(format!(
            "creating {}",
            self.inner.log_dir.display()
        )))?;
        let log = self.inner.log_dir.join(format!("{id}.log"));
        Ok((id, log))
    }

    /// Starts `command` in the background under `ctx`'s sandbox (the call's permission decided
    /// it, as for a foreground call) and returns at once. `timeout`, when given, kills it after
    /// that long. Must be called inside a tokio runtime.
    pub fn start(
        &self,
        command: &str,
        description: Option<String>,
        timeout: Option<Duration>,
        ctx: &ToolContext,
    ) -> Result<JobSnapshot, JobError> {
        let (id, log) = self.next_log()?;
        let started = spawn::spawn(command, ctx, &log)?;
        let stop = Arc::new(Notify::new());
        let job = JobSnapshot {
            id: id.clone(),
            command: command.to_string(),
            description,
            status: JobStatus::Running,
            started_ms: now_ms(),
            ended_ms: None,
            log,
            unreported: false,
        };
        {
            let mut state = self.state();
            state.jobs.push(Entry {
                job: job.clone(),
                read: 0,
                stop: stop.clone(),
                kill_requested: false,
            });
        }
        let waiter = spawn::Waiter {
            child: started.child,
            guard: started.guard,
            stop,
            timeout,
            jobs: Arc::downgrade(&self.inner),
            id,
            pump: None,
        };
        tokio::spawn(waiter.run());
        self.bump();
        Ok(job)
    }

    /// Every job this agent started that is still listed (running ones first, then the most
    /// recent finished ones).
    pub fn list(&self) -> Vec<JobSnapshot> {
        let state = self.state();
        let mut jobs: Vec<JobSnapshot> = state.jobs.iter().map(|e| e.job.clone()).collect();
        jobs.sort_by_key(|j| !j.status.is_running());
        jobs
    }

    /// The jobs still running.
    pub fn running(&self) -> Vec<JobSnapshot> {
        self.state()
            .jobs
            .iter()
            .filter(|e| e.job.status.is_running())
            .map(|e| e.job.clone())
            .collect()
    }

    /// The jobs that keep the agent busy: running, or finished with a notification the agent
    /// has not had yet.
    pub fn outstanding(&self) -> Vec<JobSnapshot> {
        self.state()
            .jobs
            .iter()
            .filter(|e| e.job.status.is_running() || e.job.unreported)
            .map(|e| e.job.clone())
            .collect()
    }

    /// Notifications not yet acknowledged, oldest first.
    pub fn pending(&self) -> Vec<Notification> {
        self.state().pending.clone()
    }

    /// Whether a notification is waiting.
    pub fn has_pending(&self) -> bool {
        !self.state().pending.is_empty()
    }

    /// Drops the notifications up to `seq`: they are in the agent's persisted conversation.
    pub fn acknowledge(&self, seq: u64) {
        {
            let mut state = self.state();
            let done: Vec<String> = state
                .pending
                .iter()
                .filter(|n| n.seq <= seq)
                .map(|n| n.job.clone())
                .collect();
            state.pending.retain(|n| n.seq > seq);
            for entry in state.jobs.iter_mut() {
                if done.contains(&entry.job.id) {
                    entry.job.unreported = false;
                }
            }
        }
        self.bump();
    }

    /// Waits until a notification is waiting (at once if one is).
    pub async fn wait_pending(&self) {
        let mut changes = self.subscribe();
        loop {
            if self.has_pending() {
                return;
            }
            if changes.changed().await.is_err() {
                // Cannot happen while `self` holds the sender; never wake for nothing.
                std::future::pending::<()>().await;
            }
        }
    }

    /// The output `id` wrote since the last read, and how it stands. Reading a finished job's
    /// final status counts as telling the agent: its notification is withdrawn.
    pub fn read(&self, id: &str) -> Result<JobRead, JobError> {
        let (log, from, finished) = {
            let state = self.state();
            let entry = find(&state, id)?;
            (
                entry.job.log.clone(),
                entry.read,
                !entry.job.status.is_running(),
            )
        };
        let (output, bytes) = read_from(&log, from)?;
        let job = {
            let mut state = self.state();
            let entry = find_mut(&mut state, id)?;
            entry.read = from + bytes;
            if finished {
                entry.job.unreported = false;
            }
            let job = entry.job.clone();
            if finished {
                state.pending.retain(|n| n.job != id);
            }
            job
        };
        if finished {
            self.bump();
        }
        Ok(JobRead { job, output, bytes })
    }

    /// Ends `id` and everything it started, waits until they are gone, and returns how it
    /// stands then (a job that had already finished is left as it was).
    pub async fn kill(&self, id: &str) -> Result<JobSnapshot, JobError> {
        let mut changes = self.subscribe();
        let reported = {
            let mut state = self.state();
            let entry = find_mut(&mut state, id)?;
            if entry.job.status.is_running() {
                entry.kill_requested = true;
                entry.stop.notify_one();
                false
            } else {
                // Asking to end it is as good as being told it ended.
                let reported = entry.job.unreported;
                entry.job.unreported = false;
                state.pending.retain(|n| n.job != id);
                reported
            }
        };
        if reported {
            self.bump();
        }
        loop {
            {
                let state = self.state();
                let entry = find(&state, id)?;
                if !entry.job.status.is_running() {
                    return Ok(entry.job.clone());
                }
            }
            if changes.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Ends every running job and waits until they are gone (the agent is ending).
    pub async fn kill_all(&self) {
        let ids: Vec<String> = self.running().into_iter().map(|j| j.id).collect();
        for id in ids {
            if let Err(e) = self.kill(&id).await {
                tracing::debug!(error = %e, "ending a background command");
            }
        }
    }

    /// Records how `id` ended; unless someone asked for that, leaves a notification for the
    /// agent. Called by the job's waiter once its processes are gone.
    fn finish(&self, id: &str, status: JobStatus) {
        {
            let mut state = self.state();
            let Ok(entry) = find_mut(&mut state, id) else {
                return;
            };
            entry.job.status = status;
            entry.job.ended_ms = Some(now_ms());
            let news = !entry.kill_requested;
            entry.job.unreported = news;
            let job = entry.job.clone();
            let unread = entry.read;
            if news {
                state.seq += 1;
                let seq = state.seq;
                let tail = tail_of(&job.log, unread);
                state.pending.push(Notification {
                    seq,
                    id: troupe_protocol::ids::new_ulid().to_string(),
                    job: job.id.clone(),
                    text: render::notification(&job, &tail),
                });
            }
            forget_old(&mut state);
        }
        self.bump();
    }
}

/// Drops the oldest finished, reported jobs beyond [`KEEP_FINISHED`].
fn forget_old(state: &mut State) {
    let finished = state
        .jobs
        .iter()
        .filter(|e| !e.job.status.is_running() && !e.job.unreported)
        .count();
    let mut excess = finished.saturating_sub(KEEP_FINISHED);
    state.jobs.retain(|e| {
        let old = !e.job.status.is_running() && !e.job.unreported;
        if old && excess > 0 {
            excess -= 1;
            return false;
        }
        true
    });
}

fn find<'a>(state: &'a State, id: &str) -> Result<&'a Entry, JobError> {
    match state.jobs.iter().find(|e| e.job.id == id) {
        Some(entry) => Ok(entry),
        None => Err(unknown(state, id)),
    }
}

fn find_mut<'a>(state: &'a mut State, id: &str) -> Result<&'a mut Entry, JobError> {
    match state.jobs.iter().position(|e| e.job.id == id) {
        Some(i) => Ok(&mut state.jobs[i]),
        None => Err(unknown(state, id)),
    }
}

fn unknown(state: &State, id: &str) -> JobError {
    let known = if state.jobs.is_empty() {
        "this agent has started none (bash with run_in_background: true starts one)".to_string()
    } else {
        let ids: Vec<String> = state
            .jobs
            .iter()
            .map(|e| format!("{} ({})", e.job.id, e.job.status.word()))
            .collect();
        format!("this agent's are: {}", ids.join(", "))
    };
    JobError::Unknown {
        id: id.to_string(),
        known,
    }
}

/// The waiter's way back to the jobs, gone when the agent is.
type JobsRef = Weak<Inner>;

impl Jobs {
    fn from_weak(weak: &JobsRef) -> Option<Jobs> {
        weak.upgrade().map(|inner| Jobs { inner })
    }
}
