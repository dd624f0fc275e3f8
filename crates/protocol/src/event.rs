//! Team events (`events.jsonl`): everything that happened, in order — the source for the
//! dashboard, `troupe team log` and audits.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of thing happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A member was spawned (or respawned with a new epoch).
    MemberSpawned,
    /// A member's status changed.
    StatusChanged,
    /// Mail was appended to a mailbox.
    MessageSent,
    /// Mail was handed to its recipient.
    MessageDelivered,
    /// A mailbox line could not be parsed and was skipped.
    CorruptMail,
    /// A protocol request was opened.
    RequestOpened,
    /// A protocol request was approved or rejected.
    RequestResolved,
    /// A protocol request passed its deadline.
    RequestExpired,
    /// A protocol request was withdrawn by its opener.
    RequestCancelled,
    /// An agent started a turn.
    TurnStarted,
    /// An agent finished a turn.
    TurnEnded,
    /// An agent called a tool.
    ToolCalled,
    /// Something went wrong.
    Error,
    /// Every teammate is idle or ended, nothing is pending, the lead's inbox is drained.
    TeamSettled,
    /// A task was put on the board.
    TaskCreated,
    /// A task changed status (claimed, completed, failed, released, cancelled).
    TaskTransitioned,
    /// A task's fields changed without a status change (description, blockers, worktree).
    TaskEdited,
    /// A git worktree was created (and perhaps bound to a task or a teammate).
    WorktreeCreated,
    /// A git worktree was marked kept: it stays in place after its work is done.
    WorktreeKept,
    /// A git worktree was removed with nothing lost (clean, its commits merged).
    WorktreeRemoved,
    /// A git worktree was removed with `discard`, throwing away what it held (recorded).
    WorktreeDiscarded,
    /// A hook command ran (settings `hooks`): its event, command and how it ended.
    HookRan,
    /// An agent's conversation was compacted: why, tokens before and after.
    Compacted,
    /// A kind written by a newer troupe; kept readable rather than treated as corruption.
    #[serde(other)]
    Other,
}

impl EventKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::MemberSpawned => "member_spawned",
            EventKind::StatusChanged => "status_changed",
            EventKind::MessageSent => "message_sent",
            EventKind::MessageDelivered => "message_delivered",
            EventKind::CorruptMail => "corrupt_mail",
            EventKind::RequestOpened => "request_opened",
            EventKind::RequestResolved => "request_resolved",
            EventKind::RequestExpired => "request_expired",
            EventKind::RequestCancelled => "request_cancelled",
            EventKind::TurnStarted => "turn_started",
            EventKind::TurnEnded => "turn_ended",
            EventKind::ToolCalled => "tool_called",
            EventKind::Error => "error",
            EventKind::TeamSettled => "team_settled",
            EventKind::TaskCreated => "task_created",
            EventKind::TaskTransitioned => "task_transitioned",
            EventKind::TaskEdited => "task_edited",
            EventKind::WorktreeCreated => "worktree_created",
            EventKind::WorktreeKept => "worktree_kept",
            EventKind::WorktreeRemoved => "worktree_removed",
            EventKind::WorktreeDiscarded => "worktree_discarded",
            EventKind::HookRan => "hook_ran",
            EventKind::Compacted => "compacted",
            EventKind::Other => "other",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, in ms since the Unix epoch.
    pub ts: u64,
    /// The agent it concerns, if any.
    #[serde(default)]
    pub agent: Option<String>,
    /// What happened.
    pub kind: EventKind,
    /// One human-readable line.
    #[serde(default)]
    pub detail: String,
    /// Structured details (ids, statuses) for tools and audits.
    #[serde(default)]
    pub data: Value,
}

impl Event {
    /// Creates an event with no structured data.
    pub fn new(
        kind: EventKind,
        agent: Option<&str>,
        detail: impl Into<String>,
        now_ms: u64,
    ) -> Event {
        Event {
            ts: now_ms,
            agent: agent.map(str::to_string),
            kind,
            detail: detail.into(),
            data: Value::Null,
        }
    }

    /// Returns the event carrying structured data.
    pub fn with_data(mut self, data: Value) -> Event {
        self.data = data;
        self
    }

    /// One line for humans: `HH:MM:SS.mmm agent kind: detail` (UTC time of day).
    pub fn human(&self) -> String {
        let ms = self.ts % 1_000;
        let secs = self.ts / 1_000;
        let (h, m, s) = ((secs / 3_600) % 24, (secs / 60) % 60, secs % 60);
        let agent = self.agent.as_deref().unwrap_or("-");
        if self.detail.is_empty() {
            format!("{h:02}:{m:02}:{s:02}.{ms:03} {agent} {}", self.kind)
        } else {
            format!(
                "{h:02}:{m:02}:{s:02}.{ms:03} {agent} {}: {}",
                self.kind, self.detail
            )
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.human())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_line() {
        // 01:02:03.004 UTC on some day.
        let ts = 86_400_000 * 3 + 3_723_004;
        let e = Event::new(
            EventKind::StatusChanged,
            Some("alice"),
            "working -> idle",
            ts,
        );
        assert_eq!(
            e.human(),
            "01:02:03.004 alice status_changed: working -> idle"
        );
        let e = Event::new(EventKind::TeamSettled, None, "", ts);
        assert_eq!(e.to_string(), "01:02:03.004 - team_settled");
    }

    #[test]
    fn round_trip_and_unknown_kind() {
        let e = Event::new(EventKind::RequestOpened, Some("lead"), "shutdown", 9)
            .with_data(json!({"request_id": "r1"}));
        let line = serde_json::to_string(&e).unwrap_or_default();
        assert!(line.contains("\"kind\":\"request_opened\""));
        let back: Event = serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(back, e);
        let future: Event = serde_json::from_str(r#"{"ts":1,"kind":"something_new"}"#)
            .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(future.kind, EventKind::Other);
        assert_eq!(future.data, Value::Null);
    }
}
