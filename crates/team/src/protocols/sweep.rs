//! Housekeeping of pending requests: expiry (the opener is told), voiding requests whose
//! addressee or opener incarnation has ended, and the settle rule's view of what is pending
//! (with one reminder to an addressee that let a request sit).

use super::{opener_epoch, Courier};
use crate::error::TeamError;
use crate::shared::TeamShared;
use crate::spec::LEAD;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{
    AgentStatus, Envelope, MailKind, Request, RequestKind, RequestStatus, Roster,
};
use troupe_store::RequestFilter;

/// A request younger than this is not reminded about: its own mail may still be on the way.
const REMIND_AFTER_MS: u64 = 1000;

/// What one sweep changed.
#[derive(Debug, Clone, Default)]
pub struct Swept {
    /// Requests that reached their deadline.
    pub expired: Vec<Request>,
    /// Requests cancelled because a party's incarnation ended.
    pub voided: Vec<Request>,
}

/// Why a pending request can no longer be answered meaningfully, if it cannot (its addressee
/// or opener incarnation ended, as a forced stop ends one); the next sweep cancels it.
pub fn void_reason(roster: &Roster, r: &Request) -> Option<String> {
    if r.to != LEAD {
        match roster.get(&r.to) {
            None => return Some(format!("{} is not on the roster", r.to)),
            Some(m) if m.epoch != r.to_epoch => {
                return Some(format!(
                    "addressed to incarnation {} of {}, which was replaced by incarnation {}",
                    r.to_epoch, r.to, m.epoch
                ))
            }
            Some(m) if m.status.is_ended() => {
                return Some(format!("{} ended ({}) before answering", r.to, m.status))
            }
            Some(_) => {}
        }
    }
    if r.from != LEAD {
        let epoch = opener_epoch(r)?;
        match roster.get(&r.from) {
            Some(m) if m.epoch == epoch && !m.status.is_ended() => {}
            _ => {
                return Some(format!(
                    "incarnation {epoch} of {}, which opened it, has ended",
                    r.from
                ))
            }
        }
    }
    None
}

/// Tells the opener that its request expired (permission waits notice it themselves).
async fn tell_opener(courier: &dyn Courier, r: &Request) {
    let content = match r.kind {
        RequestKind::Permission => return,
        RequestKind::Shutdown => format!(
            "Shutdown request {} to {} expired without an answer. You may force-stop {} with shutdown_request{{teammate: \"{}\", force: true}} (its status becomes stopped), or ask again.",
            r.id, r.to, r.to, r.to
        ),
        RequestKind::Plan => format!(
            "Your plan request {} expired without the lead's answer; submit the plan again with submit_plan if it still matters.",
            r.id
        ),
    };
    let env = Envelope::new(
        MailKind::Message,
        troupe_protocol::request::SYSTEM_ACTOR,
        &r.from,
        content,
        now_ms(),
    )
    .with_request(&r.id);
    if let Err(e) = courier.deliver(env).await {
        tracing::warn!(error = %e, request = %r.id, "could not tell the opener about an expiry");
    }
}

/// Expires overdue requests (telling their openers) and voids requests whose party has ended.
pub async fn sweep(courier: &dyn Courier, now: u64) -> Result<Swept, TeamError> {
    let store = courier.store();
    let expired = store.sweep_expired(now).await?;
    for r in &expired {
        tell_opener(courier, r).await;
    }
    let roster = store.roster().await?;
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    let mut voided = Vec::new();
    for r in store.list_requests(&pending).await? {
        let Some(why) = void_reason(&roster, &r) else {
            continue;
        };
        let opener = r.from.clone();
        let result = store
            .update_request(&r.id, &mut |req| {
                req.cancel(&opener, now)?;
                if let Some(t) = req.history.last_mut() {
                    t.note = Some(format!("void: {why}"));
                }
                Ok(())
            })
            .await;
        match result {
            Ok(req) => voided.push(req),
            // Answered meanwhile: nothing to void.
            Err(e) => tracing::debug!(error = %e, "request not voided"),
        }
    }
    Ok(Swept { expired, voided })
}

/// The settle rule's part: sweeps, then names every request still pending. An addressee that
/// sits idle with nothing unread while a request to it is pending is reminded once, so a
/// headless run does not wait for the deadline just because a model overlooked the mail.
pub async fn settle_check(shared: &TeamShared) -> Result<Vec<String>, TeamError> {
    let now = now_ms();
    sweep(shared, now).await?;
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    let requests = shared.store.list_requests(&pending).await?;
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let roster = shared.store.roster().await?;
    let mut names = Vec::new();
    for r in &requests {
        names.push(format!(
            "{} request {} ({} → {})",
            r.kind, r.id, r.from, r.to
        ));
        let waiting = r.to == LEAD
            || roster
                .get(&r.to)
                .is_some_and(|m| m.status == AgentStatus::Idle);
        let overlooked = waiting
            && now.saturating_sub(r.created_at) >= REMIND_AFTER_MS
            && shared.store.peek(&r.to).await.is_ok_and(|b| b.is_empty());
        if overlooked && shared.protocols.first_reminder(&r.id) {
            remind(shared, r).await;
        }
    }
    Ok(names)
}

async fn remind(shared: &TeamShared, r: &Request) {
    let how = match r.kind {
        RequestKind::Shutdown => "shutdown_response{request_id, approve, reason}",
        RequestKind::Plan => "review_plan{request_id, approve, feedback}",
        RequestKind::Permission => "review_permission{request_id, approve, reason}",
    };
    let content = format!(
        "Reminder: {} request {} from {} is still waiting for your answer. Answer it with {how}; the team cannot finish while it is pending.",
        r.kind, r.id, r.from
    );
    let kind = match r.kind {
        RequestKind::Shutdown => MailKind::ShutdownRequest,
        RequestKind::Plan => MailKind::PlanApprovalRequest,
        RequestKind::Permission => MailKind::PermissionRequest,
    };
    let env = Envelope::new(kind, &r.from, &r.to, content, now_ms()).with_request(&r.id);
    if let Err(e) = shared.send(env).await {
        tracing::warn!(error = %e, request = %r.id, "could not send a reminder");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use troupe_protocol::Member;

    fn roster(members: &[(&str, u64, AgentStatus)]) -> Roster {
        let mut r = Roster::new("t", LEAD);
        for (name, epoch, status) in members {
            let mut m = Member::new(*name, "coder", *epoch, 0);
            m.status = *status;
            r.members.push(m);
        }
        r
    }

    fn shutdown_to(name: &str, epoch: u64) -> Request {
        Request::open(RequestKind::Shutdown, LEAD, name, epoch, json!({}), 0, None)
    }

    fn plan_from(name: &str, epoch: u64) -> Request {
        let payload = json!({"plan": "p", "from_epoch": epoch});
        Request::open(RequestKind::Plan, name, LEAD, 0, payload, 0, None)
    }

    #[test]
    fn requests_to_or_from_a_live_incarnation_stay_valid() {
        let r = roster(&[("alice", 2, AgentStatus::Idle)]);
        assert_eq!(void_reason(&r, &shutdown_to("alice", 2)), None);
        assert_eq!(void_reason(&r, &plan_from("alice", 2)), None);
    }

    #[test]
    fn requests_of_an_ended_or_replaced_incarnation_are_void() {
        let r = roster(&[
            ("alice", 2, AgentStatus::Working),
            ("bob", 1, AgentStatus::Failed),
        ]);
        let replaced = void_reason(&r, &shutdown_to("alice", 1)).unwrap_or_default();
        assert!(replaced.contains("replaced by incarnation 2"), "{replaced}");
        let ended = void_reason(&r, &shutdown_to("bob", 1)).unwrap_or_default();
        assert!(ended.contains("bob ended (failed)"), "{ended}");
        assert!(void_reason(&r, &plan_from("alice", 1)).is_some());
        assert!(void_reason(&r, &plan_from("bob", 1)).is_some());
        assert!(void_reason(&r, &shutdown_to("nobody", 1)).is_some());
    }
}
