//! The scheduler every lead process runs: fires due jobs through a [`Deliver`], checking the
//! cron file at least every [`TICK`] (another process or `troupe cron add` may have changed it).

use crate::file::CronFile;
use crate::job::{CronJob, Firing};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest the scheduler sleeps between looks at the cron file.
pub const TICK: Duration = Duration::from_secs(1);

pub use crate::deliver::Deliver;

/// Fires the workspace's due jobs.
#[derive(Clone)]
pub struct Scheduler {
    file: CronFile,
    deliver: Arc<dyn Deliver>,
    /// When [`Scheduler::run`] looks first: the soonest due time [`Scheduler::fire_now`] saw
    /// (`u64::MAX`: no job), or 0 (look at once) when it has not run.
    first_look_ms: Arc<AtomicU64>,
}

impl Scheduler {
    /// A scheduler over `file`, delivering through `deliver`.
    pub fn new(file: CronFile, deliver: Arc<dyn Deliver>) -> Scheduler {
        Scheduler {
            file,
            deliver,
            first_look_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Fires what is due now; blocks on the file lock. Call it once at start, before the first
    /// turn, so a job missed while nothing ran is in the inbox when the agent first looks.
    pub fn fire_now(&self) -> Vec<(CronJob, Firing)> {
        let fired = match self.file.fire_due(crate::now_ms(), self.deliver.as_ref()) {
            Ok(fired) => {
                for (job, firing) in &fired {
                    tracing::info!(job = %job.id, to = %job.to, late = firing.late, "scheduled prompt fired");
                }
                fired
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not fire scheduled prompts");
                Vec::new()
            }
        };
        let soonest = self.file.next_due().ok().flatten().unwrap_or(u64::MAX);
        self.first_look_ms.store(soonest, Ordering::Relaxed);
        fired
    }

    /// Fires due jobs until the runtime ends: each time the soonest job is due, and at least
    /// every [`TICK`] to see jobs other processes added.
    pub async fn run(self) {
        // What `fire_now` just did needs no second look before the soonest job or a tick (a
        // short run, like one `-p` prompt, never wakes the scheduler at all).
        let first = self.first_look_ms.load(Ordering::Relaxed);
        if first > 0 {
            tokio::time::sleep(until(first)).await;
        }
        loop {
            let this = self.clone();
            let next = match tokio::task::spawn_blocking(move || {
                this.fire_now();
                this.file.next_due()
            })
            .await
            {
                Ok(Ok(next)) => next,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "reading scheduled prompts");
                    None
                }
                // The runtime is shutting down.
                Err(_) => return,
            };
            tokio::time::sleep(until(next.unwrap_or(u64::MAX))).await;
        }
    }
}

/// How long to sleep before looking again when the soonest job is due at `due_ms`: until then,
/// at most a [`TICK`].
fn until(due_ms: u64) -> Duration {
    Duration::from_millis(due_ms.saturating_sub(crate::now_ms())).min(TICK)
}
