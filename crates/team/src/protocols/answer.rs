//! A person answers a pending request from outside the team — `troupe team approve|reject`
//! from another terminal, or the dashboard of `troupe team watch` — through the same request
//! FSM and the same steps as the lead's tools, recorded as the person's answer
//! (`user:<name>`): a plan's gate is lifted on approval and the teammate told, a permission's
//! waiting call is woken by its mail, a shutdown approved for a teammate ends it. Whoever was
//! passed over (the lead for plans and permissions, the teammate for a rejected shutdown) is
//! told, so nobody answers a settled question again.

use super::shutdown::end_in_store;
use super::{load, mail_about, Courier, ProtocolError};
use crate::spec::LEAD;
use serde_json::json;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{
    AgentStatus, Envelope, MailKind, Request, RequestError, RequestKind, RequestStatus,
    USER_OWNER_PREFIX,
};

/// Who gives an answer: the party a request is addressed to, or a person in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Party<'a> {
    /// The addressee itself (the lead, for plans and permissions), by name.
    Addressee(&'a str),
    /// The person operating the team, as `user:<name>`.
    Person(&'a str),
}

impl Party<'_> {
    /// The name recorded as the answer's author.
    pub fn name(&self) -> &str {
        match self {
            Party::Addressee(name) | Party::Person(name) => name,
        }
    }

    /// How the party is named to the one who gets the answer ("the lead", "user:ann").
    pub fn described(&self) -> String {
        match self {
            Party::Addressee(name) if *name == LEAD => "the lead".to_string(),
            Party::Addressee(name) | Party::Person(name) => (*name).to_string(),
        }
    }

    /// True when this party may answer `request` at all (its addressee, or any person).
    pub fn may_answer(&self, request: &Request) -> bool {
        match self {
            Party::Addressee(name) => request.to == *name,
            Party::Person(_) => true,
        }
    }

    /// Answers through the FSM: the addressee at `epoch`, or the person in its place.
    pub fn respond(
        &self,
        request: &mut Request,
        epoch: u64,
        approve: bool,
        reason: Option<String>,
        now: u64,
    ) -> Result<RequestStatus, RequestError> {
        match self {
            Party::Addressee(name) => request.respond(name, epoch, approve, reason, now),
            Party::Person(person) => request.respond_as_person(person, approve, reason, now),
        }
    }
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Yes: the plan may be carried out, the call may run, the teammate may shut down.
    Approve,
    /// No.
    Reject,
}

impl Verdict {
    /// True for [`Verdict::Approve`].
    pub fn approves(self) -> bool {
        match self {
            Verdict::Approve => true,
            Verdict::Reject => false,
        }
    }

    /// "approved" or "rejected".
    pub fn past(self) -> &'static str {
        match self {
            Verdict::Approve => "approved",
            Verdict::Reject => "rejected",
        }
    }
}

/// The person `user:<name>` as recorded in answers and mail; `name` may already carry the
/// prefix.
pub fn person_id(name: &str) -> String {
    if name.starts_with(USER_OWNER_PREFIX) {
        name.to_string()
    } else {
        format!("{USER_OWNER_PREFIX}{name}")
    }
}

/// Answers the pending request `id` as `person` (`user:<name>`), whatever its kind, and tells
/// everyone concerned; returns the request as resolved. The FSM refuses what it refuses for
/// the lead's tools (an unknown id, a resolved or expired request), and a plan whose
/// submitter has ended is cancelled instead of answered.
pub async fn answer_as_person(
    courier: &dyn Courier,
    person: &str,
    id: &str,
    verdict: Verdict,
    reason: Option<String>,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let id = id.trim();
    let kind = store
        .get_request(id)
        .await
        .map_err(|e| ProtocolError::from_store(id, e))?
        .ok_or_else(|| ProtocolError::UnknownRequest(id.to_string()))?
        .kind;
    let party = Party::Person(person);
    let approve = verdict.approves();
    let request = match kind {
        RequestKind::Plan => {
            super::plan::review_plan_by(courier, party, id, approve, reason.clone()).await?
        }
        RequestKind::Permission => {
            super::permission::review_permission_by(courier, party, id, approve, reason.clone())
                .await?
        }
        RequestKind::Shutdown => answer_shutdown_for(courier, person, id, verdict, &reason).await?,
    };
    if kind != RequestKind::Plan {
        // A plan's lead is told before the answer is recorded (see `review_plan_by`).
        tell_passed_over(courier, person, &request, verdict, &reason).await;
    }
    Ok(request)
}

/// A shutdown request answered in the teammate's place: recorded, the lead told, and on
/// approval the teammate ended (roster `shutdown`, its process signalled, its tasks back).
async fn answer_shutdown_for(
    courier: &dyn Courier,
    person: &str,
    id: &str,
    verdict: Verdict,
    reason: &Option<String>,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let asked = load(store, id, RequestKind::Shutdown, "approve/reject").await?;
    let id = asked.id.clone();
    let record = async || {
        store
            .update_request(&id, &mut |r| {
                r.respond_as_person(person, verdict.approves(), reason.clone(), now_ms())
                    .map(|_| ())
            })
            .await
            .map_err(|e| ProtocolError::from_store(&id, e))
    };
    if asked.status != RequestStatus::Pending {
        // Already answered or expired: the FSM says so (and nothing is mailed).
        return record().await;
    }
    let teammate = asked.to.clone();
    // The teammate as it stands: the one this request was sent to, still running.
    let member = match verdict {
        Verdict::Approve => store
            .roster()
            .await?
            .get(&teammate)
            .filter(|m| m.epoch == asked.to_epoch && !m.status.is_ended())
            .cloned(),
        Verdict::Reject => None,
    };
    let ended = match (verdict, &member) {
        (Verdict::Approve, Some(_)) => "; it has been shut down",
        (Verdict::Approve, None) => "; it had already ended",
        (Verdict::Reject, _) => "; it keeps working",
    };
    let why = reason
        .as_deref()
        .map(|r| format!(" Reason: {r}"))
        .unwrap_or_default();
    let content = format!(
        "{person} {} shutdown request {id} in the place of {teammate}{ended}.{why}",
        verdict.past()
    );
    // The mail goes first: a lead that sees the request answered or the teammate ended must
    // also find this note, or a headless run could settle and exit before it arrives.
    let payload = json!({ "approve": verdict.approves(), "reason": reason, "by": person });
    mail_about(
        courier,
        &asked,
        MailKind::ShutdownResponse,
        person,
        &asked.from,
        content,
        payload,
    )
    .await?;
    let request = record().await?;
    if let Some(m) = member {
        let why = format!("shutdown approved by {person} in its place");
        end_in_store(store, &m, AgentStatus::Shutdown, &why).await?;
    }
    Ok(request)
}

/// Tells the party the request was addressed to that a person answered it in its place: the
/// lead for plans and permissions, the teammate for a rejected shutdown (an approved one has
/// ended it). Best effort: the answer is recorded whatever happens to this note.
pub(super) async fn tell_passed_over(
    courier: &dyn Courier,
    person: &str,
    request: &Request,
    verdict: Verdict,
    reason: &Option<String>,
) {
    let why = reason
        .as_deref()
        .map(|r| format!(" Reason: {r}"))
        .unwrap_or_default();
    let (to, text) = match request.kind {
        RequestKind::Plan => (
            LEAD,
            format!(
                "{person} {} {}'s plan (request {}) in your place; {} has been told. Do not review it again.{why}",
                verdict.past(),
                request.from,
                request.id,
                request.from
            ),
        ),
        RequestKind::Permission => (
            LEAD,
            format!(
                "{person} {} {}'s permission request {} in your place; {} has been told. Do not answer it again.{why}",
                verdict.past(),
                request.from,
                request.id,
                request.from
            ),
        ),
        RequestKind::Shutdown if verdict == Verdict::Reject => (
            request.to.as_str(),
            format!(
                "{person} answered shutdown request {} for you: rejected, keep working. Do not answer it yourself.{why}",
                request.id
            ),
        ),
        RequestKind::Shutdown => return,
    };
    let env = Envelope::new(MailKind::Message, person, to, text, now_ms());
    if let Err(e) = courier.deliver(env).await {
        tracing::warn!(error = %e, to, "could not tell who a person answered for");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn person_ids_and_parties() {
        assert_eq!(person_id("ann"), "user:ann");
        assert_eq!(person_id("user:ann"), "user:ann");
        assert_eq!(Party::Addressee(LEAD).described(), "the lead");
        assert_eq!(Party::Person("user:ann").described(), "user:ann");
        assert_eq!(Verdict::Reject.past(), "rejected");
        assert!(Verdict::Approve.approves());
    }
}
