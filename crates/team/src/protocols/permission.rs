//! Permission escalation: when a teammate's tool call needs approval under its permission
//! mode, the call becomes a `permission` request to the lead and waits for the answer. Who
//! answers for the lead is a setting: the lead model (`review_permission`, the default) or
//! the person at the REPL (`teammate_permissions: "user"`).

use super::answer::Party;
use super::{
    load, mail_about, open_and_mail, Courier, ProtocolError, LEAD_EPOCH, PERMISSION_TTL_MS,
};
use crate::shared::TeamShared;
use crate::spec::LEAD;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use troupe_agent::{Approval, Approver, Question};
use troupe_protocol::{now_ms, MailKind, Request, RequestKind, RequestStatus, RetryPolicy};
use troupe_tools::{
    parse_input, schema_of, summarize_input, Effect, Tool, ToolContext, ToolOutput,
};

/// How the approver retries marking an overdue request expired when the store fails: a few
/// times, backing off, before it refuses the call (never a busy loop).
const EXPIRE_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 5,
    base_delay: Duration::from_millis(100),
    max_delay: Duration::from_secs(2),
};

/// Which party answers teammates' permission questions for the lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answerer {
    /// The lead model, through `review_permission` (the default).
    #[default]
    Lead,
    /// The person at the REPL.
    User,
}

impl std::str::FromStr for Answerer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lead" => Ok(Answerer::Lead),
            "user" => Ok(Answerer::User),
            other => Err(format!(
                "unknown teammate_permissions '{other}' (use lead or user)"
            )),
        }
    }
}

/// A teammate's approver: turns a permission question into a request to the lead and waits.
pub struct EscalatingApprover {
    shared: Arc<TeamShared>,
    name: String,
    epoch: u64,
}

impl EscalatingApprover {
    /// The approver of one incarnation.
    pub fn new(shared: Arc<TeamShared>, name: &str, epoch: u64) -> EscalatingApprover {
        EscalatingApprover {
            shared,
            name: name.to_string(),
            epoch,
        }
    }

    /// Asks the person directly, keeping the request on record (answered as the lead).
    async fn ask_person(
        &self,
        person: Arc<dyn Approver>,
        request: &Request,
        question: Question<'_>,
    ) -> Approval {
        let record = request.clone();
        if let Err(e) = self.shared.store.create_request(&record).await {
            return Approval::Deny(format!("could not record the permission request: {e}"));
        }
        let answer = person
            .approve(Question {
                request_id: Some(&request.id),
                ..question
            })
            .await;
        let (approve, reason) = match &answer {
            Approval::Allow | Approval::AllowWith(_) => {
                (true, Some("answered by the user".to_string()))
            }
            Approval::Deny(why) => (false, Some(why.clone())),
        };
        let id = request.id.clone();
        let recorded = async {
            let s: &TeamShared = &self.shared;
            s.store
                .update_request(&id, &mut |r| {
                    r.respond(LEAD, LEAD_EPOCH, approve, reason.clone(), now_ms())
                        .map(|_| ())
                })
                .await
        }
        .await;
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "could not record the user's permission answer");
        }
        answer
    }

    /// Waits until the request is resolved, re-reading it only when something happened: an
    /// answer given in this process (`wake`), the member's mailbox watch (an answer from
    /// another process is mailed to it first; a force-stop notifies it), or the request's
    /// expiry. Store reads run off the async workers.
    async fn wait(&self, id: &str, tool: &str, wake: &Notify) -> Approval {
        let member_wake = self.shared.wake_of(&self.name);
        let mut expiring = EXPIRE_RETRY.backoff();
        loop {
            let now = now_ms();
            let (sid, name, epoch) = (id.to_string(), self.name.clone(), self.epoch);
            let (read, ended) = async {
                let s: &TeamShared = &self.shared;
                let read = s.store.get_request(&sid);
                let ended = super::incarnation_ended(&*s.store, &name, epoch);
                (read, ended)
            }
            .await;
            let request = match read.await {
                Ok(Some(r)) => r,
                Ok(None) => {
                    return Approval::Deny(format!(
                        "the permission request {id} disappeared; the {tool} call was not run"
                    ))
                }
                Err(e) => {
                    return Approval::Deny(format!(
                    "could not read the permission request {id} ({e}); the {tool} call was not run"
                ))
                }
            };
            match request.status {
                RequestStatus::Approved => return Approval::Allow,
                RequestStatus::Rejected => {
                    let who = if request.answered_by_person() {
                        "the person overseeing the team"
                    } else {
                        "the lead"
                    };
                    let why = request
                        .response
                        .and_then(|r| r.reason)
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default();
                    return Approval::Deny(format!(
                        "{who} refused this {tool} call{why}. Do not retry it; adapt your approach or ask the lead."
                    ));
                }
                RequestStatus::Expired => {
                    return Approval::Deny(format!(
                        "the lead did not answer permission request {id} in time; the {tool} call was not run"
                    ))
                }
                RequestStatus::Cancelled => {
                    return Approval::Deny(format!(
                        "permission request {id} was cancelled; the {tool} call was not run"
                    ))
                }
                RequestStatus::Pending if request.is_overdue(now) => {
                    // Expire it ourselves rather than wait for a sweep that may never run.
                    let sid = id.to_string();
                    let expired = self.shared.store.update_request(&sid, &mut |r| r.expire(now)).await;
                    // Either way the request is read again: answered meanwhile, or expired.
                    // A store that keeps failing is retried with backoff, then given up on.
                    if let Err(e) = expired {
                        match expiring.next_pause() {
                            Some(pause) => tokio::time::sleep(pause).await,
                            None => {
                                return Approval::Deny(format!(
                                    "permission request {id} is past its deadline and could not be marked expired \
                                     ({e}); the {tool} call was not run. Check that the team's store is reachable and writable"
                                ))
                            }
                        }
                    }
                    continue;
                }
                RequestStatus::Pending => {}
            }
            if ended.await {
                let (sid, me) = (id.to_string(), self.name.clone());
                async {
                    let s: &TeamShared = &self.shared;
                    let _ = s
                        .store
                        .update_request(&sid, &mut |r| r.cancel(&me, now))
                        .await;
                }
                .await;
                return Approval::Deny(format!(
                    "you have been stopped; the {tool} call was not run"
                ));
            }
            // Woken by a change, never by polling; the only timer is the request's deadline.
            let until_expiry = request
                .expires_at
                .map(|at| Duration::from_millis(at.saturating_sub(now)));
            let expiry = async {
                match until_expiry {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let mailbox = async {
                match &member_wake {
                    Some(w) => w.lock().await.wait().await,
                    // Not a member loop of this process (no watch): only this process's
                    // answers and the deadline can wake it.
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = wake.notified() => {}
                () = mailbox => {}
                () = expiry => {}
            }
        }
    }
}

#[async_trait]
impl Approver for EscalatingApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        let summary = summarize_input(question.tool, question.input);
        let payload = json!({
            "tool": question.tool,
            "input": question.input,
            "summary": summary,
            "reason": question.reason,
            "from_epoch": self.epoch,
        });
        let request = Request::open(
            RequestKind::Permission,
            &self.name,
            LEAD,
            LEAD_EPOCH,
            payload,
            now_ms(),
            Some(PERMISSION_TTL_MS),
        );
        if let Some(person) = self.shared.protocols.user_answerer() {
            return self.ask_person(person, &request, question).await;
        }
        // Registered before the request exists, so an answer can never slip past the waiter.
        let wake = self.shared.protocols.waiter(&request.id);
        let content = format!(
            "{name} asks permission to run {tool}: {summary}\n(it needs approval because: {reason})\n\
Answer with review_permission{{request_id: \"{id}\", approve, reason}}; {name} is waiting for your answer.",
            name = self.name,
            tool = question.tool,
            reason = question.reason,
            id = request.id
        );
        let opened = request.clone();
        let mailed =
            open_and_mail(&*self.shared, &opened, MailKind::PermissionRequest, content).await;
        if let Err(e) = mailed {
            self.shared.protocols.forget_waiter(&request.id);
            return Approval::Deny(format!("could not ask the lead for permission: {e}"));
        }
        let answer = self.wait(&request.id, question.tool, &wake).await;
        self.shared.protocols.forget_waiter(&request.id);
        answer
    }
}

/// The lead's answer to a permission request: recorded, the teammate told, and its waiting
/// call woken.
pub async fn review_permission(
    shared: &TeamShared,
    by: &str,
    id: &str,
    approve: bool,
    reason: Option<String>,
) -> Result<Request, ProtocolError> {
    let answered = review_permission_by(shared, Party::Addressee(by), id, approve, reason).await;
    // After the mail, so the teammate sees it with its tool result rather than being woken for
    // it later; a waiter woken for nothing re-checks the store.
    shared.protocols.resolved(id.trim());
    answered
}

/// [`review_permission`] by either party, through any courier: the teammate's waiting call
/// is woken by the mail (its member's mailbox watch), wherever it runs.
pub(crate) async fn review_permission_by(
    courier: &dyn Courier,
    party: Party<'_>,
    id: &str,
    approve: bool,
    reason: Option<String>,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let current = load(store, id, RequestKind::Permission, "review_permission").await?;
    let id = current.id.clone();
    let request = store
        .update_request(&id, &mut |r| {
            party
                .respond(r, LEAD_EPOCH, approve, reason.clone(), now_ms())
                .map(|_| ())
        })
        .await
        .map_err(|e| ProtocolError::from_store(&id, e))?;
    let tool = request
        .payload
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("the tool call");
    let who = capitalized(&party.described());
    let content = match (approve, reason.as_deref()) {
        (true, _) => format!("{who} allowed {tool} (request {id})."),
        (false, Some(why)) => format!("{who} refused {tool} (request {id}): {why}"),
        (false, None) => format!("{who} refused {tool} (request {id})."),
    };
    let to = request.from.clone();
    mail_about(
        courier,
        &request,
        MailKind::PermissionResponse,
        party.name(),
        &to,
        content,
        json!({ "approve": approve, "reason": reason }),
    )
    .await?;
    Ok(request)
}

/// "The lead" for "the lead"; a person's id unchanged.
fn capitalized(who: &str) -> String {
    match who.strip_prefix("the ") {
        Some(rest) => format!("The {rest}"),
        None => who.to_string(),
    }
}

/// Input of `review_permission`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewPermissionInput {
    /// The id of the permission request.
    pub request_id: String,
    /// True to let the call run, false to refuse it.
    pub approve: bool,
    /// Why (shown to the teammate).
    #[serde(default)]
    pub reason: Option<String>,
}

/// `review_permission{request_id, approve, reason?}` (lead): answers a teammate's permission request.
pub struct ReviewPermission {
    shared: Arc<TeamShared>,
}

impl ReviewPermission {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ReviewPermission {
        ReviewPermission { shared }
    }
}

#[async_trait]
impl Tool for ReviewPermission {
    fn name(&self) -> &str {
        "review_permission"
    }
    fn description(&self) -> &str {
        "Allow or refuse a teammate's tool call (from a permission_request). The teammate's call is waiting for this answer; a refusal becomes an error result for it."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReviewPermissionInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::REVIEW_PERMISSION)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ReviewPermissionInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if ctx.agent != LEAD {
            return ToolOutput::error(
                ProtocolError::LeadOnly("answer permission requests").to_string(),
            );
        }
        match review_permission(
            &self.shared,
            &ctx.agent,
            &input.request_id,
            input.approve,
            input.reason,
        )
        .await
        {
            Ok(r) => ToolOutput::ok(format!(
                "Permission request {} of {} {}.",
                r.id, r.from, r.status
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
