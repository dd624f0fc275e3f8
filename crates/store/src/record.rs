//! The events a store records for the changes it makes (requests, tasks, skipped mail), built
//! here once so every backend writes the same log.

use serde_json::json;
use troupe_protocol::{Event, EventKind, Request, RequestStatus, Task, TaskTransition, Transition};

use crate::CorruptLine;

/// The event kind a request transition to `to` is recorded as.
fn request_event_kind(to: RequestStatus) -> EventKind {
    match to {
        RequestStatus::Approved | RequestStatus::Rejected => EventKind::RequestResolved,
        RequestStatus::Expired => EventKind::RequestExpired,
        RequestStatus::Cancelled => EventKind::RequestCancelled,
        // No transition leads back to pending; named for exhaustiveness only.
        RequestStatus::Pending => EventKind::RequestOpened,
    }
}

/// A request was opened.
pub fn request_opened(request: &Request) -> Event {
    Event::new(
        EventKind::RequestOpened,
        Some(&request.from),
        format!(
            "{} request {} opened by {} for {}",
            request.kind, request.id, request.from, request.to
        ),
        request.created_at,
    )
    .with_data(json!({
        "request_id": request.id, "kind": request.kind, "from": request.from,
        "to": request.to, "to_epoch": request.to_epoch, "expires_at": request.expires_at,
    }))
}

/// A request went through transition `t`.
pub fn request_transition(r: &Request, t: &Transition) -> Event {
    let mut detail = format!(
        "{} request {} ({} -> {}): {} by {}",
        r.kind, r.id, r.from, r.to, t.to, t.by
    );
    if let Some(note) = &t.note {
        detail.push_str(": ");
        detail.push_str(note);
    }
    Event::new(request_event_kind(t.to), Some(&t.by), detail, t.at).with_data(json!({
        "request_id": r.id, "kind": r.kind, "from": r.from, "to": r.to,
        "status": t.to, "by": t.by,
    }))
}

/// The transitions `after` has beyond `before`, as events.
pub fn request_changes(before_history: usize, after: &Request) -> Vec<Event> {
    after
        .history
        .iter()
        .skip(before_history)
        .map(|t| request_transition(after, t))
        .collect()
}

/// A task was put on the board.
pub fn task_created(task: &Task) -> Event {
    Event::new(
        EventKind::TaskCreated,
        Some(&task.created_by),
        format!(
            "task {} created by {}: {}",
            task.id, task.created_by, task.subject
        ),
        task.created_at,
    )
    .with_data(json!({
        "task_id": task.id, "subject": task.subject, "blocked_by": task.blocked_by,
        "created_by": task.created_by,
    }))
}

/// A task went through transition `t`.
pub fn task_transition(task: &Task, t: &TaskTransition) -> Event {
    let mut detail = format!(
        "task {} ({}): {} -> {} by {}",
        task.id, task.subject, t.from, t.to, t.by
    );
    if let Some(note) = &t.note {
        detail.push_str(": ");
        detail.push_str(note);
    }
    Event::new(EventKind::TaskTransitioned, Some(&t.by), detail, t.at).with_data(json!({
        "task_id": task.id, "from": t.from, "to": t.to, "by": t.by,
        "owner": task.owner, "note": t.note,
    }))
}

/// What changed from `before` to `task`, as events: each new transition, or one edit when
/// there is none (blockers, worktree).
pub fn task_changes(before: &Task, task: &Task) -> Vec<Event> {
    let new = task.history.get(before.history.len()..).unwrap_or_default();
    if new.is_empty() {
        let event = Event::new(
            EventKind::TaskEdited,
            None,
            format!("task {} ({}) edited", task.id, task.subject),
            task.updated_at,
        )
        .with_data(json!({
            "task_id": task.id, "blocked_by": task.blocked_by, "worktree": task.worktree,
        }));
        return vec![event];
    }
    new.iter()
        .map(|t| match t.from == t.to {
            // An edit the history records (description, blockers).
            true => Event::new(
                EventKind::TaskEdited,
                Some(&t.by),
                format!(
                    "task {} ({}) edited: {}",
                    task.id,
                    task.subject,
                    t.note.as_deref().unwrap_or("changed")
                ),
                t.at,
            )
            .with_data(json!({
                "task_id": task.id, "by": t.by, "note": t.note,
                "blocked_by": task.blocked_by, "worktree": task.worktree,
            })),
            false => task_transition(task, t),
        })
        .collect()
}

/// A mailbox entry was skipped because it did not parse; `place` says where it was, in the
/// backend's terms ("line at byte 120 of inbox/bob.jsonl").
pub fn corrupt_mail(agent: &str, place: &str, bad: &CorruptLine, at: u64) -> Event {
    Event::new(
        EventKind::CorruptMail,
        Some(agent),
        format!("skipped corrupt {place}: {}", bad.error),
        at,
    )
    .with_data(json!({"offset": bad.offset, "text": bad.text, "error": bad.error}))
}
