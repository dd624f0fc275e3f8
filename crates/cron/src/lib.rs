//! Scheduled prompts (s20 cron): `schedule_cron{schedule, prompt, to?}`, `list_crons`,
//! `cancel_cron{id}`, and `troupe cron list|add|remove`.
//!
//! Jobs live in `.troupe/cron.json` (replaced atomically, changed only under the flock of
//! `.troupe/cron.lock`), so they survive restarts and any troupe process of the workspace sees
//! them. Every lead process runs a [`Scheduler`]; a due job is claimed, delivered and advanced
//! under the lock, so it fires once however many processes watch it. A job that came due while
//! nothing ran fires once at the next start, marked late. Delivery is the caller's
//! ([`Deliver`]): the binary puts `[Scheduled] <prompt>` in the target agent's team mailbox,
//! which wakes it like any mail — this crate knows nothing of teams.
//!
//! Must not know: the agent loop's internals or the team runtime. Delivery goes through the
//! [`Deliver`] trait its caller implements.

mod deliver;
mod file;
mod job;
mod schedule;
mod scheduler;
mod tools;

pub use file::{CronError, CronFile};
pub use job::{CronJob, Firing, ScheduleKind};
pub use schedule::{parse_schedule, Schedule, ScheduleError};
pub use scheduler::{Deliver, Scheduler};
pub use tools::{CancelCronTool, CronExtension, ListCronsTool, ScheduleCronTool};

/// Milliseconds since the Unix epoch (troupe's one clock).
pub use troupe_protocol::now_ms;

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    use super::tool_schemas;
    use troupe_tools::schema::Built;

    #[test]
    fn tool_schemas_are_current() {
        let all = [
            Built::new::<crate::tools::ScheduleInput>("SCHEDULE", tool_schemas::SCHEDULE),
            Built::new::<crate::tools::ListInput>("LIST", tool_schemas::LIST),
            Built::new::<crate::tools::CancelInput>("CANCEL", tool_schemas::CANCEL),
        ];
        assert_eq!(
            troupe_tools::schema::check(&all, env!("CARGO_MANIFEST_DIR"), "troupe-cron"),
            Ok(())
        );
    }
}
