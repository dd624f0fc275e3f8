//! How a fired job reaches its target: the seam the binary implements over the mailboxes.

use crate::CronJob;

/// Puts a fired job's message where its target agent reads it, and says whether a target can
/// receive at all. The binary implements it over the team's mailboxes.
pub trait Deliver: Send + Sync {
    /// Delivers `message` (`[Scheduled] <prompt>`) for `job` to `job.to` on `job.team`.
    fn deliver(&self, job: &CronJob, message: &str) -> Result<(), String>;

    /// Checks, when a job is scheduled, that `to` on `team` can receive it.
    fn check(&self, _team: &str, _to: &str) -> Result<(), String> {
        Ok(())
    }
}
