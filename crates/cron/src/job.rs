//! One scheduled prompt as `.troupe/cron.json` keeps it, and the message it becomes.

use crate::schedule::{parse_schedule, show_time, Schedule, ScheduleError};
use serde::{Deserialize, Serialize};

/// Whether a job fires once or again and again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// A delay or a moment: fires once, then is gone.
    Once,
    /// A cron expression: fires at every match.
    Recurring,
}

/// One scheduled prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronJob {
    /// Its id (`cron-…`), for `cancel_cron` and `troupe cron remove`.
    pub id: String,
    /// The schedule as it was given (`in 3m`, `*/5 * * * *`, an RFC 3339 time).
    pub schedule: String,
    /// Once or recurring.
    pub kind: ScheduleKind,
    /// What the target agent is told, after `[Scheduled] `.
    pub prompt: String,
    /// The team whose mailbox it is delivered through.
    pub team: String,
    /// The agent it is for (`lead`, a teammate's name).
    pub to: String,
    /// Who scheduled it (an agent's name, or `user:<name>` from the command line).
    pub created_by: String,
    /// When it was scheduled, in ms since the Unix epoch.
    pub created_ms: u64,
    /// When it fires next, in ms since the Unix epoch.
    pub next_ms: u64,
    /// How many times it has fired.
    #[serde(default)]
    pub fired: u64,
    /// When it last fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fired_ms: Option<u64>,
}

/// One firing of a job: when it was due, and whether that was a while ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Firing {
    /// When it was due, in ms since the Unix epoch.
    pub due_ms: u64,
    /// Whether it fires well after that (nothing was running when it came due).
    pub late: bool,
}

impl CronJob {
    /// A new job, its schedule parsed as of `now_ms`; the id is fresh.
    pub fn new(
        schedule: &str,
        prompt: &str,
        team: &str,
        to: &str,
        created_by: &str,
        now_ms: u64,
    ) -> Result<CronJob, ScheduleError> {
        let parsed = parse_schedule(schedule, now_ms)?;
        let kind = match parsed {
            Schedule::Once(_) => ScheduleKind::Once,
            Schedule::Recurring(_) => ScheduleKind::Recurring,
        };
        let next_ms = parsed.next_after(now_ms).ok_or_else(|| ScheduleError {
            given: schedule.to_string(),
            why: "it never fires".into(),
        })?;
        Ok(CronJob {
            id: new_id(),
            schedule: schedule.trim().to_string(),
            kind,
            prompt: prompt.to_string(),
            team: team.to_string(),
            to: to.to_string(),
            created_by: created_by.to_string(),
            created_ms: now_ms,
            next_ms,
            fired: 0,
            last_fired_ms: None,
        })
    }

    /// When it fires after `now_ms` for a recurring job; `None` for a one-shot (it is done).
    pub fn next_after(&self, now_ms: u64) -> Option<u64> {
        match self.kind {
            ScheduleKind::Once => None,
            ScheduleKind::Recurring => parse_schedule(&self.schedule, now_ms)
                .ok()?
                .next_after(now_ms),
        }
    }

    /// What the target agent reads when the job fires.
    pub fn message(&self, firing: Firing) -> String {
        match firing.late {
            false => format!("[Scheduled] {}", self.prompt),
            true => format!(
                "[Scheduled] {}\n(late: this was due at {}, while no troupe was running to deliver it)",
                self.prompt,
                show_time(firing.due_ms)
            ),
        }
    }

    /// When it fires next, as people read it.
    pub fn next_shown(&self) -> String {
        show_time(self.next_ms)
    }
}

/// A short, unique id: `cron-` and eight characters of a ULID's random part.
fn new_id() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut random = troupe_protocol::ids::new_ulid().random();
    let mut id = String::from("cron-");
    for _ in 0..8 {
        id.push(ALPHABET[(random % 32) as usize] as char);
        random /= 32;
    }
    id
}
