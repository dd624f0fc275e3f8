//! Plan approval: a teammate spawned with `require_plan` is held in plan mode by a gate in the
//! tool layer (mutating tools are refused) until the lead approves its plan with
//! `review_plan`. Approval is persisted in the roster (`plan_approved`), so it survives a
//! restart; a rejection delivers the feedback and a revised plan opens a new request.

use super::answer::{Party, Verdict};
use super::{load, mail_about, open_and_mail, Courier, ProtocolError, LEAD_EPOCH, PLAN_TTL_MS};
use crate::shared::TeamShared;
use crate::spec::LEAD;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_agent::transcript::now_ms;
use troupe_agent::ToolGate;
use troupe_protocol::{MailKind, Request, RequestKind, RequestStatus, Roster};
use troupe_store::RequestFilter;
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// The payload key a person's answer stamps on a pending plan before it tells anyone (the
/// person's id): the verdict may be in the teammate's hands before it is recorded, so the
/// teammate's revision must not cancel the plan under it. Recording any answer removes it.
pub const ANSWERING: &str = "answering";

/// Opens a plan request from `name` (at `epoch`) to the lead; a plan of the same incarnation
/// still pending is cancelled as superseded, unless a person's answer to it is under way
/// ([`ANSWERING`]: the teammate may be revising because of that very verdict, which is about
/// to be recorded). A pending plan of an earlier incarnation is not this one's to revise: the
/// sweep voids it, saying its opener ended.
pub async fn submit_plan(
    courier: &dyn Courier,
    name: &str,
    epoch: u64,
    plan: &str,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let now = now_ms();
    let filter = RequestFilter {
        status: Some(RequestStatus::Pending),
        kind: Some(RequestKind::Plan),
        agent: Some(name.to_string()),
    };
    for old in store.list_requests(&filter).await? {
        if old.from != name || super::opener_epoch(&old) != Some(epoch) {
            continue;
        }
        let result = store
            .update_request(&old.id, &mut |r| {
                if r.status == RequestStatus::Pending && r.payload.get(ANSWERING).is_some() {
                    return Ok(()); // its verdict is being delivered: the answer records it
                }
                r.cancel(name, now)?;
                if let Some(t) = r.history.last_mut() {
                    t.note = Some("superseded by a revised plan".to_string());
                }
                Ok(())
            })
            .await;
        if let Err(e) = result {
            // Resolved meanwhile: the lead answered the old plan first; keep going.
            tracing::debug!(error = %e, "old plan not cancelled");
        }
    }
    let payload = json!({ "plan": plan, "from_epoch": epoch });
    let request = Request::open(
        RequestKind::Plan,
        name,
        LEAD,
        LEAD_EPOCH,
        payload,
        now,
        Some(PLAN_TTL_MS),
    );
    let content = format!(
        "{name} submits a plan for your approval (request {id}):\n{plan}\n\nApprove or reject with \
review_plan{{request_id: \"{id}\", approve, feedback}}.",
        id = request.id
    );
    open_and_mail(courier, &request, MailKind::PlanApprovalRequest, content).await?;
    Ok(request)
}

/// The lead's verdict on a plan: recorded, the gate lifted on approval (roster
/// `plan_approved` for that incarnation), and the teammate told (with the feedback).
pub async fn review_plan(
    courier: &dyn Courier,
    by: &str,
    id: &str,
    approve: bool,
    feedback: Option<String>,
) -> Result<Request, ProtocolError> {
    review_plan_by(courier, Party::Addressee(by), id, approve, feedback).await
}

/// [`review_plan`] by either party: the lead, or a person answering in its place.
pub(crate) async fn review_plan_by(
    courier: &dyn Courier,
    party: Party<'_>,
    id: &str,
    approve: bool,
    feedback: Option<String>,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let current = load(store, id, RequestKind::Plan, "review_plan").await?;
    let id = current.id.clone();
    let opener_epoch = super::opener_epoch(&current).unwrap_or(0);
    let opener_alive = !super::incarnation_ended(store, &current.from, opener_epoch).await;
    if current.status == RequestStatus::Pending && party.may_answer(&current) && !opener_alive {
        let now = now_ms();
        let from = current.from.clone();
        let _ = store
            .update_request(&id, &mut |r| {
                r.cancel(&from, now)?;
                if let Some(t) = r.history.last_mut() {
                    t.note = Some("the teammate that submitted it has ended".to_string());
                }
                Ok(())
            })
            .await;
        return Err(ProtocolError::OpenerGone {
            id,
            opener: current.from,
            epoch: opener_epoch,
        });
    }
    // A person answers from another process: first the plan is stamped as being answered (so
    // the teammate's revision, prompted by this very verdict, cannot cancel it), then the lead
    // and the teammate are told (and, on approval, the gate opened), and only then does the
    // request leave pending. So a headless lead's settle rule never sees it answered while the
    // teammate or the lead has yet to be told: each has the mail unread by then. The lead's own
    // answer comes mid-turn, when the team cannot settle, and keeps the record first.
    let person = match party {
        Party::Person(p)
            if current.status == RequestStatus::Pending && party.may_answer(&current) =>
        {
            Some(p)
        }
        _ => None,
    };
    let mut told = false;
    if let Some(person) = person {
        let stamped = store
            .update_request(&id, &mut |r| {
                if let (RequestStatus::Pending, Some(p)) = (r.status, r.payload.as_object_mut()) {
                    p.insert(ANSWERING.to_string(), json!(person));
                }
                Ok(())
            })
            .await
            .map_err(|e| ProtocolError::from_store(&id, e))?;
        // Answered or expired meanwhile: the record below refuses, naming where it stands.
        if stamped.status == RequestStatus::Pending {
            let verdict = if approve {
                Verdict::Approve
            } else {
                Verdict::Reject
            };
            super::answer::tell_passed_over(courier, person, &stamped, verdict, &feedback).await;
            let result = tell_opener(
                courier,
                &stamped,
                &party,
                approve,
                feedback.as_deref(),
                opener_epoch,
            )
            .await;
            if let Err(e) = result {
                // Not answered after all: a revision may supersede the plan again.
                let _ = store
                    .update_request(&id, &mut |r| {
                        if let Some(p) = r.payload.as_object_mut() {
                            p.remove(ANSWERING);
                        }
                        Ok(())
                    })
                    .await;
                return Err(e);
            }
            told = true;
        }
    }
    let request = store
        .update_request(&id, &mut |r| {
            party.respond(r, LEAD_EPOCH, approve, feedback.clone(), now_ms())?;
            if let Some(p) = r.payload.as_object_mut() {
                p.remove(ANSWERING);
            }
            Ok(())
        })
        .await
        .map_err(|e| ProtocolError::from_store(&id, e))?;
    if !told {
        tell_opener(
            courier,
            &request,
            &party,
            approve,
            feedback.as_deref(),
            opener_epoch,
        )
        .await?;
    }
    Ok(request)
}

/// Opens the opener's gate on approval (for the incarnation that asked) and mails it the
/// verdict.
async fn tell_opener(
    courier: &dyn Courier,
    request: &Request,
    party: &Party<'_>,
    approve: bool,
    feedback: Option<&str>,
    opener_epoch: u64,
) -> Result<(), ProtocolError> {
    let store = courier.store();
    let id = &request.id;
    if approve {
        let name = request.from.clone();
        store
            .update_roster(&mut |roster: &mut Roster| {
                if let Some(m) = roster.get_mut(&name) {
                    if m.epoch == opener_epoch {
                        m.plan_approved = true;
                    }
                }
            })
            .await?;
    }
    let who = party.described();
    let content = match (approve, feedback) {
        (true, Some(f)) => format!("Your plan (request {id}) was approved. You may now edit files and run commands to carry it out. Note from {who}: {f}"),
        (true, None) => format!("Your plan (request {id}) was approved. You may now edit files and run commands to carry it out."),
        (false, Some(f)) => format!("Your plan (request {id}) was rejected. Feedback: {f}\nRevise the plan and submit it again with submit_plan; until then, change nothing."),
        (false, None) => format!("Your plan (request {id}) was rejected (no feedback given). Revise it and submit it again with submit_plan; until then, change nothing."),
    };
    let payload = json!({ "approve": approve, "feedback": feedback });
    mail_about(
        courier,
        request,
        MailKind::PlanApprovalResponse,
        party.name(),
        &request.from,
        content,
        payload,
    )
    .await
}

/// The plan gate: refuses mutating tools (edits, non-read-only bash) until the plan of this
/// incarnation is approved. Approval is read from the roster, so it may come from any process.
pub struct PlanGate {
    shared: Arc<TeamShared>,
    name: String,
    epoch: u64,
    approved: AtomicBool,
}

impl PlanGate {
    /// The gate of one incarnation, starting from what the roster says.
    pub fn new(shared: Arc<TeamShared>, name: &str, epoch: u64, approved: bool) -> PlanGate {
        PlanGate {
            shared,
            name: name.to_string(),
            epoch,
            approved: AtomicBool::new(approved),
        }
    }

    async fn approved_now(&self) -> bool {
        if self.approved.load(Ordering::SeqCst) {
            return true;
        }
        // Only a refusal pays for a roster read; approval is sticky for the incarnation.
        let approved = self
            .shared
            .store
            .member(&self.name)
            .await
            .ok()
            .flatten()
            .is_some_and(|m| m.epoch == self.epoch && m.plan_approved);
        if approved {
            self.approved.store(true, Ordering::SeqCst);
        }
        approved
    }
}

#[async_trait::async_trait]
impl ToolGate for PlanGate {
    async fn check(&self, tool: &str, effect: Effect, _input: &Value) -> Option<String> {
        match effect {
            Effect::ReadOnly | Effect::Coordinate => None,
            Effect::Edit | Effect::Execute if self.approved_now().await => None,
            Effect::Edit | Effect::Execute => Some(format!(
                "{tool} was refused: you are in plan mode and your plan has not been approved yet. \
Submit your plan first with submit_plan{{plan}}, then wait for the lead's plan_approval_response; \
until it approves, only read-only tools work."
            )),
        }
    }

    async fn confines(&self, _tool: &str, _effect: Effect, _input: &Value) -> bool {
        // Before approval only read-only calls pass, on the strength of the classifier alone.
        !self.approved_now().await
    }
}

/// Input of `submit_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SubmitPlanInput {
    /// The plan: what you will change, where, and how you will check it.
    pub plan: String,
}

/// `submit_plan{plan}` (teammate): asks the lead to approve a plan.
pub struct SubmitPlan {
    shared: Arc<TeamShared>,
    epoch: u64,
    name: &'static str,
}

impl SubmitPlan {
    /// The tool for one incarnation.
    pub fn new(shared: Arc<TeamShared>, epoch: u64) -> SubmitPlan {
        SubmitPlan {
            shared,
            epoch,
            name: "submit_plan",
        }
    }

    /// The same tool under Claude Code's name for it, `exit_plan_mode` (`ExitPlanMode`): a
    /// teammate's plan goes to the lead.
    pub fn exit_plan_mode(shared: Arc<TeamShared>, epoch: u64) -> SubmitPlan {
        SubmitPlan {
            name: "exit_plan_mode",
            ..SubmitPlan::new(shared, epoch)
        }
    }
}

#[async_trait]
impl Tool for SubmitPlan {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Submit your plan to the lead for approval. The verdict arrives as a plan_approval_response in your inbox; a revised plan replaces a pending one."
    }
    fn input_schema(&self) -> Value {
        schema_of::<SubmitPlanInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SUBMIT_PLAN)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: SubmitPlanInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.plan.trim().is_empty() {
            return ToolOutput::error("the plan is empty; describe what you will change and how");
        }
        match submit_plan(&*self.shared, &ctx.agent, self.epoch, &input.plan).await {
            Ok(r) => ToolOutput::ok(format!(
                "Plan submitted to the lead as request {}. Wait for the plan_approval_response in your inbox before changing anything; end your turn if there is nothing read-only left to do.",
                r.id
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `review_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewPlanInput {
    /// The id of the plan request.
    pub request_id: String,
    /// True to approve (lifts the teammate's plan gate), false to reject.
    pub approve: bool,
    /// What to change (for a rejection) or any note (for an approval).
    #[serde(default)]
    pub feedback: Option<String>,
}

/// `review_plan{request_id, approve, feedback?}` (lead): the verdict on a teammate's plan.
pub struct ReviewPlan {
    shared: Arc<TeamShared>,
}

impl ReviewPlan {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ReviewPlan {
        ReviewPlan { shared }
    }
}

#[async_trait]
impl Tool for ReviewPlan {
    fn name(&self) -> &str {
        "review_plan"
    }
    fn description(&self) -> &str {
        "Approve or reject a teammate's plan (from a plan_approval_request). Approval lets it edit files and run commands; rejection sends your feedback so it can revise and resubmit."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReviewPlanInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::REVIEW_PLAN)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ReviewPlanInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if ctx.agent != LEAD {
            return ToolOutput::error(ProtocolError::LeadOnly("review plans").to_string());
        }
        match review_plan(
            &*self.shared,
            &ctx.agent,
            &input.request_id,
            input.approve,
            input.feedback,
        )
        .await
        {
            Ok(r) if input.approve => ToolOutput::ok(format!(
                "Plan {} of {} approved; it may now make changes.",
                r.id, r.from
            )),
            Ok(r) => ToolOutput::ok(format!(
                "Plan {} of {} rejected; your feedback was delivered.",
                r.id, r.from
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
