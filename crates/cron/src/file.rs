//! `.troupe/cron.json`: the workspace's scheduled prompts, replaced atomically and changed only
//! under the exclusive flock of `.troupe/cron.lock`, so processes never lose each other's
//! changes and a due job is claimed by exactly one of them.

use crate::deliver::Deliver;
use crate::job::{CronJob, Firing, ScheduleKind};
use crate::schedule::ScheduleError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use troupe_durable::atomic::write_atomic;
use troupe_durable::lock::LockFile;
use troupe_durable::DurableError;

/// How long after its time a job counts as late: longer than a running scheduler ever takes
/// to notice it, so only a job nobody was there to fire is marked.
pub const LATE_AFTER_MS: u64 = 10_000;

/// Why the cron file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    /// Reading, locking or writing failed.
    #[error(transparent)]
    File(#[from] DurableError),
    /// The jobs could not be serialised (should not happen for troupe's own types).
    #[error("could not serialize the cron jobs: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The file is not what troupe writes.
    #[error("{path} is corrupt ({source}); fix or remove it")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// No job has this id.
    #[error("no scheduled prompt '{id}'; {known}")]
    Unknown {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// The schedule was not understood.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    jobs: Vec<CronJob>,
}

/// The cron file of one workspace.
#[derive(Debug, Clone)]
pub struct CronFile {
    path: PathBuf,
    lock: PathBuf,
}

impl CronFile {
    /// The cron file under `troupe_dir` (`<workspace>/.troupe`).
    pub fn in_dir(troupe_dir: &Path) -> CronFile {
        CronFile {
            path: troupe_dir.join("cron.json"),
            lock: troupe_dir.join("cron.lock"),
        }
    }

    /// Where the jobs are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every job, soonest first.
    pub fn list(&self) -> Result<Vec<CronJob>, CronError> {
        let mut jobs = self.read()?.jobs;
        jobs.sort_by_key(|j| j.next_ms);
        Ok(jobs)
    }

    /// Adds a job.
    pub fn add(&self, job: CronJob) -> Result<CronJob, CronError> {
        self.change(|contents| {
            contents.jobs.push(job.clone());
            Ok(job)
        })
    }

    /// Removes the job `id` and returns it.
    pub fn remove(&self, id: &str) -> Result<CronJob, CronError> {
        self.change(
            |contents| match contents.jobs.iter().position(|j| j.id == id) {
                Some(i) => Ok(contents.jobs.remove(i)),
                None => Err(unknown(&contents.jobs, id)),
            },
        )
    }

    /// Fires every job due at `now_ms`: under the lock, each is delivered and then advanced (a
    /// recurring job to its next time after now, however many times it was missed; a one-shot
    /// job removed), so each due time is delivered by one process, once. A job whose delivery
    /// fails stays due and is tried again. Returns what fired.
    pub fn fire_due(
        &self,
        now_ms: u64,
        deliver: &dyn Deliver,
    ) -> Result<Vec<(CronJob, Firing)>, CronError> {
        // Most ticks find nothing due: check without the lock first.
        if !self.read()?.jobs.iter().any(|j| j.next_ms <= now_ms) {
            return Ok(Vec::new());
        }
        self.change(|contents| {
            let mut fired = Vec::new();
            let mut keep = Vec::with_capacity(contents.jobs.len());
            for mut job in std::mem::take(&mut contents.jobs) {
                if job.next_ms > now_ms {
                    keep.push(job);
                    continue;
                }
                let firing = Firing {
                    due_ms: job.next_ms,
                    late: now_ms.saturating_sub(job.next_ms) > LATE_AFTER_MS,
                };
                if let Err(why) = deliver.deliver(&job, &job.message(firing)) {
                    tracing::warn!(job = %job.id, error = %why, "could not deliver a scheduled prompt; trying again");
                    keep.push(job);
                    continue;
                }
                job.fired += 1;
                job.last_fired_ms = Some(now_ms);
                fired.push((job.clone(), firing));
                if job.kind == ScheduleKind::Recurring {
                    match job.next_after(now_ms) {
                        Some(next) => {
                            job.next_ms = next;
                            keep.push(job);
                        }
                        None => tracing::info!(job = %job.id, "a scheduled prompt will not fire again"),
                    }
                }
            }
            contents.jobs = keep;
            Ok(fired)
        })
    }

    /// The soonest time any job is due, if there is one.
    pub fn next_due(&self) -> Result<Option<u64>, CronError> {
        Ok(self.read()?.jobs.iter().map(|j| j.next_ms).min())
    }

    fn read(&self) -> Result<Contents, CronError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| CronError::Corrupt {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
            Err(e) => Err(io_error("read", &self.path)(e)),
        }
    }

    /// Read-modify-write under the lock; written only when `f` succeeds.
    fn change<R>(
        &self,
        f: impl FnOnce(&mut Contents) -> Result<R, CronError>,
    ) -> Result<R, CronError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create directory", dir))?;
        }
        let _lock = LockFile::acquire(&self.lock)?;
        let mut contents = self.read()?;
        let result = f(&mut contents)?;
        let bytes = serde_json::to_vec_pretty(&contents).map_err(CronError::Serialize)?;
        write_atomic(&self.path, &bytes)?;
        Ok(result)
    }
}

fn unknown(jobs: &[CronJob], id: &str) -> CronError {
    let known = match jobs.is_empty() {
        true => "there are none".to_string(),
        false => format!(
            "there are: {}",
            jobs.iter()
                .map(|j| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    CronError::Unknown {
        id: id.to_string(),
        known,
    }
}

/// Wraps an I/O error with the action and path it concerns.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CronError {
    let wrap = DurableError::io(action, path.to_path_buf());
    move |source| CronError::File(wrap(source))
}
