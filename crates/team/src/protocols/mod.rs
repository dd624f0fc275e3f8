//! Team protocols (docs/DESIGN.md, "Protocols"): shutdown handshake, plan approval gate and
//! permission escalation, all built on the durable request FSM of `troupe_protocol::request` and
//! the request store. The harness enforces every rule; the prompt only explains them.

pub mod answer;
pub mod error;
pub mod list;
pub mod permission;
pub mod plan;
pub mod shutdown;
pub mod state;
pub mod sweep;

use crate::error::TeamError;
use crate::shared::TeamShared;
use crate::spec::MemberSpec;
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_agent::transcript::now_ms;
use troupe_agent::ToolGate;
use troupe_protocol::{Envelope, MailKind, Request, RequestKind};
use troupe_store::TeamStore;
use troupe_tools::DynTool;

pub use error::ProtocolError;
pub use state::ProtocolState;

/// How long a teammate has to answer a shutdown request before the lead may force-stop it.
pub const SHUTDOWN_TTL_MS: u64 = 5 * 60 * 1000;
/// How long a submitted plan waits for the lead's review.
pub const PLAN_TTL_MS: u64 = 30 * 60 * 1000;
/// How long a tool call waits for the lead's permission before it is refused.
pub const PERMISSION_TTL_MS: u64 = 10 * 60 * 1000;
/// The lead is not on the roster and never respawns, so requests to it carry epoch 0.
pub const LEAD_EPOCH: u64 = 0;

/// Delivers protocol mail: the runtime in a lead or teammate process, or the bare store for
/// the `troupe team` subcommands run from another terminal.
#[async_trait::async_trait]
pub trait Courier: Send + Sync {
    /// The team's store.
    fn store(&self) -> &dyn TeamStore;
    /// Sends one envelope (the recipient must be on the roster, or the lead).
    async fn deliver(&self, env: Envelope) -> Result<(), TeamError>;
}

#[async_trait::async_trait]
impl Courier for TeamShared {
    fn store(&self) -> &dyn TeamStore {
        &*self.store
    }
    async fn deliver(&self, env: Envelope) -> Result<(), TeamError> {
        self.send(env).await.map(|_| ())
    }
}

/// A courier over the bare store, for a process that is not running the team.
pub struct StoreCourier<'a>(pub &'a dyn TeamStore);

#[async_trait::async_trait]
impl Courier for StoreCourier<'_> {
    fn store(&self) -> &dyn TeamStore {
        self.0
    }
    async fn deliver(&self, env: Envelope) -> Result<(), TeamError> {
        crate::shared::deliver(self.0, &env).await
    }
}

/// Opens a request in the store and mails its addressee; a request whose mail cannot be
/// delivered is cancelled again, so nothing stays pending that nobody was told about.
pub async fn open_and_mail(
    courier: &dyn Courier,
    request: &Request,
    kind: MailKind,
    content: String,
) -> Result<(), ProtocolError> {
    courier.store().create_request(request).await?;
    let env = Envelope::new(
        kind,
        &request.from,
        &request.to,
        content,
        request.created_at,
    )
    .with_request(&request.id)
    .with_payload(request.payload.clone());
    if let Err(e) = courier.deliver(env).await {
        let opener = request.from.clone();
        let _ = courier
            .store()
            .update_request(&request.id, &mut |r| r.cancel(&opener, now_ms()))
            .await;
        return Err(e.into());
    }
    Ok(())
}

/// Mails the other party of a request (responses, verdicts), carrying the request id.
pub async fn mail_about(
    courier: &dyn Courier,
    request: &Request,
    kind: MailKind,
    from: &str,
    to: &str,
    content: String,
    payload: Value,
) -> Result<(), ProtocolError> {
    let env = Envelope::new(kind, from, to, content, now_ms())
        .with_request(&request.id)
        .with_payload(payload);
    courier.deliver(env).await?;
    Ok(())
}

/// Loads a request and checks it belongs to the protocol the tool serves.
pub async fn load(
    store: &dyn TeamStore,
    id: &str,
    expected: RequestKind,
    tool: &'static str,
) -> Result<Request, ProtocolError> {
    let id = id.trim();
    let request = store
        .get_request(id)
        .await
        .map_err(|e| ProtocolError::from_store(id, e))?
        .ok_or_else(|| ProtocolError::UnknownRequest(id.to_string()))?;
    if request.kind != expected {
        return Err(ProtocolError::WrongKind {
            id: id.to_string(),
            actual: request.kind,
            expected,
            tool,
        });
    }
    Ok(request)
}

/// The epoch of the incarnation that opened a request (teammates record it in the payload).
pub fn opener_epoch(request: &Request) -> Option<u64> {
    request.payload.get("from_epoch").and_then(Value::as_u64)
}

/// True when this incarnation of a teammate is gone: off the roster, respawned, or ended.
pub async fn incarnation_ended(store: &dyn TeamStore, name: &str, epoch: u64) -> bool {
    match store.member(name).await {
        Ok(Some(m)) => m.epoch != epoch || m.status.is_ended(),
        Ok(None) => true,
        // An unreadable roster says nothing about the member; keep it running.
        Err(_) => false,
    }
}

/// Whether a teammate incarnation works in plan mode: `Some(approved)` when its roster entry
/// requires a plan, `None` otherwise (or when the entry belongs to another incarnation).
pub async fn plan_state(
    store: &dyn TeamStore,
    spec: &MemberSpec,
) -> Result<Option<bool>, TeamError> {
    let member = store.member(&spec.name).await?;
    Ok(match member {
        Some(m) if m.require_plan && m.epoch == spec.epoch => Some(m.plan_approved),
        _ => None,
    })
}

/// A teammate's protocol tools; `stop` is its agent's stop flag (an approved shutdown sets it).
pub fn teammate_tools(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
    stop: &Arc<AtomicBool>,
) -> Vec<DynTool> {
    vec![
        Arc::new(shutdown::ShutdownResponse::new(
            shared.clone(),
            spec.epoch,
            stop.clone(),
        )),
        Arc::new(plan::SubmitPlan::new(shared.clone(), spec.epoch)),
        Arc::new(plan::SubmitPlan::exit_plan_mode(shared.clone(), spec.epoch)),
    ]
}

/// A teammate's protocol gates: the stop gate always, the plan gate in plan mode.
pub fn teammate_gates(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
    stop: &Arc<AtomicBool>,
    plan: Option<bool>,
) -> Vec<Arc<dyn ToolGate>> {
    let mut gates: Vec<Arc<dyn ToolGate>> = vec![Arc::new(shutdown::StopGate::new(
        shared.clone(),
        &spec.name,
        spec.epoch,
        stop.clone(),
    ))];
    if let Some(approved) = plan {
        gates.push(Arc::new(plan::PlanGate::new(
            shared.clone(),
            &spec.name,
            spec.epoch,
            approved,
        )));
    }
    gates
}

/// The protocol part of a teammate's system prompt; `plan` is `Some(approved)` in plan mode.
pub fn teammate_section(plan: Option<bool>) -> String {
    let mut text = String::from(
        "# Team protocols\n\
- The lead may ask you to shut down: a shutdown_request arrives in your inbox with a request_id. Answer it with \
shutdown_response{request_id, approve, reason}. Approve when you can stop: the tool calls of your current step finish, \
then you exit. Reject (with a reason) when you are in the middle of work that must not be interrupted.\n\
- A tool call your permission mode does not allow by itself is sent to the lead for approval and waits for the \
answer; a refusal comes back as an error result — do not retry the same call, adapt.\n\
- Use request ids exactly as given.",
    );
    match plan {
        Some(false) => text.push_str(
            "\n\n# Plan mode\nYou are in plan mode: until the lead approves your plan, the harness refuses write_file, \
edit_file and bash commands that are not read-only. First explore with read-only tools, then submit your plan with \
submit_plan{plan} and end your turn. The lead's verdict arrives as a plan_approval_response: on approval carry the plan \
out; on rejection revise it following the feedback and submit it again.",
        ),
        Some(true) => text.push_str(
            "\n\n# Plan mode\nYour plan has been approved by the lead: you may edit files and run commands to carry it out.",
        ),
        None => {}
    }
    text
}

/// The protocol part of the lead's system prompt.
pub fn lead_section() -> String {
    "# Team protocols\n\
- To stop a teammate, ask with shutdown_request{teammate, reason}: it answers with a shutdown_response in your inbox \
(approve: it finishes its current step and exits; reject: it keeps working and says why). If a request expires \
unanswered you may force-stop with shutdown_request{teammate, force: true}.\n\
- A teammate spawned with require_plan: true must have its plan approved before it can change anything. Plans arrive \
as plan_approval_request mail; answer with review_plan{request_id, approve, feedback}. Only you can approve.\n\
- When a teammate needs permission for a tool call you get a permission_request; answer with \
review_permission{request_id, approve, reason}. The teammate waits for your answer.\n\
- list_requests{status} shows every protocol request and where it stands."
        .to_string()
}

/// The lead's protocol tools.
pub fn lead_tools(shared: &Arc<TeamShared>) -> Vec<DynTool> {
    vec![
        Arc::new(shutdown::ShutdownRequest::new(shared.clone())),
        Arc::new(plan::ReviewPlan::new(shared.clone())),
        Arc::new(permission::ReviewPermission::new(shared.clone())),
        Arc::new(list::ListRequests::new(shared.clone())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_mode_is_explained_until_approved() {
        let pending = teammate_section(Some(false));
        assert!(pending.contains("You are in plan mode") && pending.contains("submit_plan{plan}"));
        let approved = teammate_section(Some(true));
        assert!(approved.contains("has been approved"));
        let none = teammate_section(None);
        assert!(!none.contains("plan mode") && none.contains("shutdown_response"));
    }

    #[test]
    fn answerer_setting_parses() {
        use permission::Answerer;
        assert_eq!("lead".parse::<Answerer>(), Ok(Answerer::Lead));
        assert_eq!("user".parse::<Answerer>(), Ok(Answerer::User));
        assert!("model".parse::<Answerer>().is_err());
    }
}
