//! The shutdown handshake: the lead asks (`shutdown_request`), the teammate answers
//! (`shutdown_response`); on approval the teammate finishes its current round of tool calls
//! and exits (roster `shutdown`). After an unanswered request expires the lead may force-stop
//! (roster `stopped`); the operator may force-stop at any time with `troupe team stop --force`.

use super::{
    load, mail_about, open_and_mail, Courier, ProtocolError, StoreCourier, SHUTDOWN_TTL_MS,
};
use crate::liveness;
use crate::shared::{members_list, TeamShared};
use crate::spec::LEAD;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_agent::transcript::now_ms;
use troupe_agent::ToolGate;
use troupe_protocol::{
    AgentStatus, Event, EventKind, MailKind, Member, Request, RequestKind, RequestStatus, Roster,
};
use troupe_store::{LeaseState, RequestFilter, TeamStore};
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// What asking for a shutdown led to.
#[derive(Debug, Clone)]
pub enum Asked {
    /// A new request was opened and mailed.
    Opened(Request),
    /// A request to this incarnation was already pending; it is returned instead of a duplicate.
    AlreadyPending(Request),
}

/// When a force-stop is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForcePolicy {
    /// Only after a shutdown request to this incarnation expired unanswered (the lead model).
    AfterExpiry,
    /// At once (an operator override from `troupe team stop --force`).
    Override,
}

/// The live member `name`, or an error the model can act on.
async fn live_member(store: &dyn TeamStore, name: &str) -> Result<Member, ProtocolError> {
    let roster: Roster = store.roster().await?;
    match roster.get(name) {
        None => Err(ProtocolError::UnknownTeammate {
            name: name.to_string(),
            members: members_list(&roster),
        }),
        Some(m) if m.status.is_ended() => Err(ProtocolError::AlreadyEnded {
            name: name.to_string(),
            status: m.status,
        }),
        Some(m) => Ok(m.clone()),
    }
}

/// Opens a shutdown request from `from` (the lead) to the current incarnation of `teammate`
/// and mails it; a pending request to the same incarnation is reused.
pub async fn request_shutdown(
    courier: &dyn Courier,
    from: &str,
    teammate: &str,
    reason: Option<String>,
) -> Result<Asked, ProtocolError> {
    let store = courier.store();
    let member = live_member(store, teammate).await?;
    let filter = RequestFilter {
        status: Some(RequestStatus::Pending),
        kind: Some(RequestKind::Shutdown),
        agent: Some(teammate.to_string()),
    };
    let now = now_ms();
    if let Some(existing) = store
        .list_requests(&filter)
        .await?
        .into_iter()
        .find(|r| r.to == teammate && r.to_epoch == member.epoch && !r.is_overdue(now))
    {
        return Ok(Asked::AlreadyPending(existing));
    }
    let payload = json!({ "reason": reason });
    let request = Request::open(
        RequestKind::Shutdown,
        from,
        teammate,
        member.epoch,
        payload,
        now,
        Some(SHUTDOWN_TTL_MS),
    );
    let why = reason
        .as_deref()
        .map(|r| format!(" Reason: {r}."))
        .unwrap_or_default();
    let content = format!(
        "{from} asks you to shut down (request {id}).{why} If you can stop now, approve with \
shutdown_response{{request_id: \"{id}\", approve: true}}: the tool calls of your current step finish, then you exit. \
If you are in the middle of work that must not be interrupted, reject with approve: false and a reason.",
        id = request.id
    );
    open_and_mail(courier, &request, MailKind::ShutdownRequest, content).await?;
    Ok(Asked::Opened(request))
}

/// Records a teammate's answer (`by` at `by_epoch`) and tells the opener. The FSM refuses
/// unknown ids, wrong responders, stale incarnations, resolved and expired requests.
pub async fn answer_shutdown(
    courier: &dyn Courier,
    by: &str,
    by_epoch: u64,
    id: &str,
    approve: bool,
    reason: Option<String>,
) -> Result<Request, ProtocolError> {
    let store = courier.store();
    let id = load(store, id, RequestKind::Shutdown, "shutdown_response")
        .await?
        .id;
    let request = store
        .update_request(&id, &mut |r| {
            r.respond(by, by_epoch, approve, reason.clone(), now_ms())
                .map(|_| ())
        })
        .await
        .map_err(|e| ProtocolError::from_store(&id, e))?;
    let content = match (approve, reason.as_deref()) {
        (true, _) => format!(
            "{by} approved shutdown request {id}: it finishes the tool calls of its current step, then exits."
        ),
        (false, Some(why)) => format!("{by} rejected shutdown request {id} and keeps working: {why}"),
        (false, None) => format!("{by} rejected shutdown request {id} and keeps working (no reason given)."),
    };
    let payload = json!({ "approve": approve, "reason": reason });
    mail_about(
        courier,
        &request,
        MailKind::ShutdownResponse,
        by,
        &request.from,
        content,
        payload,
    )
    .await?;
    Ok(request)
}

/// Checks that `name` may be force-stopped under `policy` and returns the member.
async fn force_target(
    store: &dyn TeamStore,
    name: &str,
    policy: ForcePolicy,
) -> Result<Member, ProtocolError> {
    let member = live_member(store, name).await?;
    if policy == ForcePolicy::Override {
        return Ok(member);
    }
    let now = now_ms();
    store.sweep_expired(now).await?;
    let filter = RequestFilter {
        status: None,
        kind: Some(RequestKind::Shutdown),
        agent: Some(name.to_string()),
    };
    let mine: Vec<Request> = store
        .list_requests(&filter)
        .await?
        .into_iter()
        .filter(|r| r.to == name && r.to_epoch == member.epoch)
        .collect();
    if let Some(pending) = mine.iter().find(|r| r.status == RequestStatus::Pending) {
        let left = pending.expires_at.unwrap_or(now).saturating_sub(now) / 1000;
        return Err(ProtocolError::ForceTooEarly {
            name: name.to_string(),
            why: format!(
                "shutdown request {} is still pending for another {left}s; wait for the answer",
                pending.id
            ),
        });
    }
    if !mine.iter().any(|r| r.status == RequestStatus::Expired) {
        return Err(ProtocolError::ForceTooEarly {
            name: name.to_string(),
            why: "no shutdown request to it has expired unanswered".to_string(),
        });
    }
    Ok(member)
}

/// Ends a teammate's own process (SIGTERM: it ends at its round boundary) and wakes it, so an
/// idle loop notices the stop. Only a live lease names a process to signal, and only when its
/// holder is the process the roster gives the member: an in-process teammate's lease is held
/// by the lead's process, which is never signalled; one on another machine (a team on a
/// server) is only told through its roster entry and the wake.
async fn signal(store: &dyn TeamStore, member: &Member) {
    if let Ok(LeaseState::Held(Some(holder))) = store.probe_lease(&member.name).await {
        let own_process = member.pid == Some(holder.pid) && holder.is_on_this_host();
        if own_process && holder.pid != std::process::id() {
            // SIGTERM to the live holder of the lease.
            let pid = i32::try_from(holder.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
    }
    if let Err(e) = store.notify(&member.name).await {
        tracing::warn!(error = %e, member = %member.name, "could not wake a stopped teammate");
    }
}

/// Force-stops a teammate through the bare store (another terminal): roster `stopped`, an
/// event, SIGTERM to its process, a wake so an idle in-process loop exits; a working
/// in-process teammate stops at its next tool call (see [`StopGate`]).
pub async fn force_stop_in_store(
    store: &dyn TeamStore,
    name: &str,
    policy: ForcePolicy,
    by: &str,
) -> Result<Member, ProtocolError> {
    let member = force_target(store, name, policy).await?;
    end_in_store(
        store,
        &member,
        AgentStatus::Stopped,
        &format!("force-stopped by {by}"),
    )
    .await?;
    Ok(member)
}

/// Ends one incarnation of a teammate through the bare store: roster `status` (unless it
/// ended already), an event saying `why`, its tasks back on the board, SIGTERM to its own
/// process and a wake, so an idle loop notices; a working in-process teammate stops at its
/// next tool call (see [`StopGate`]).
pub(crate) async fn end_in_store(
    store: &dyn TeamStore,
    member: &Member,
    status: AgentStatus,
    why: &str,
) -> Result<(), ProtocolError> {
    let name = member.name.as_str();
    let now = now_ms();
    store
        .update_roster(&mut |roster: &mut Roster| {
            if let Some(m) = roster.get_mut(name) {
                if m.epoch == member.epoch && !m.status.is_ended() {
                    m.status = status;
                    m.activity = None;
                    m.last_seen = now;
                }
            }
        })
        .await?;
    let event = Event::new(
        EventKind::StatusChanged,
        Some(name),
        format!("{status}: {why}"),
        now,
    );
    if let Err(e) = store.record(&event).await {
        tracing::warn!(error = %e, "could not record a teammate's end");
    }
    // Before the signal: the member's own end would give them back with a vaguer note.
    release_tasks(&StoreCourier(store), name, why).await;
    signal(store, member).await;
    Ok(())
}

/// An ended member's tasks go back to the board at once: its process may be stuck, or gone,
/// and will not finish them.
async fn release_tasks(courier: &dyn Courier, name: &str, how: &str) {
    let why = format!("its owner {name} was {how}");
    if let Err(e) = liveness::release_tasks_of(courier, name, &why).await {
        tracing::warn!(error = %e, member = name, "could not give a stopped member's tasks back");
    }
}

impl TeamShared {
    /// Force-stops a teammate from the process running the team: roster `stopped`, its
    /// agent's stop flag set (it finishes the tool calls in flight), its process signalled.
    pub async fn force_stop(
        &self,
        name: &str,
        policy: ForcePolicy,
    ) -> Result<Member, ProtocolError> {
        let member = force_target(&*self.store, name, policy).await?;
        self.set_status(name, member.epoch, AgentStatus::Stopped, "force-stopped")
            .await;
        self.protocols.stop_agent(name, member.epoch);
        release_tasks(self, name, &format!("force-stopped by {LEAD}")).await;
        signal(&*self.store, &member).await;
        Ok(member)
    }
}

/// Input of `shutdown_request`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShutdownRequestInput {
    /// The teammate to shut down.
    pub teammate: String,
    /// Why, for the teammate.
    #[serde(default)]
    pub reason: Option<String>,
    /// Stop it without consent (see the description).
    #[serde(default)]
    pub force: bool,
}

/// `shutdown_request{teammate, reason?, force?}` (lead): asks a teammate to shut down.
pub struct ShutdownRequest {
    shared: Arc<TeamShared>,
}

impl ShutdownRequest {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ShutdownRequest {
        ShutdownRequest { shared }
    }
}

#[async_trait]
impl Tool for ShutdownRequest {
    fn name(&self) -> &str {
        "shutdown_request"
    }
    fn description(&self) -> &str {
        "Ask a teammate to shut down. Returns the request id; the teammate's shutdown_response (approve or reject, with a reason) arrives in your inbox. With force: true, stop it without consent — allowed only after a shutdown request to it expired unanswered."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ShutdownRequestInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SHUTDOWN_REQUEST)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ShutdownRequestInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if ctx.agent != LEAD {
            return ToolOutput::error(ProtocolError::LeadOnly("request a shutdown").to_string());
        }
        if input.force {
            return match self
                .shared
                .force_stop(&input.teammate, ForcePolicy::AfterExpiry)
                .await
            {
                Ok(m) => ToolOutput::ok(format!(
                    "Force-stopped '{}' (epoch {}); the roster says stopped.",
                    m.name, m.epoch
                )),
                Err(e) => ToolOutput::error(e.to_string()),
            };
        }
        match request_shutdown(&*self.shared, &ctx.agent, &input.teammate, input.reason).await {
            Ok(Asked::Opened(r)) => ToolOutput::ok(format!(
                "Shutdown request {} sent to {} (status: pending, expires in {} min). Its shutdown_response will arrive in your inbox.",
                r.id,
                r.to,
                SHUTDOWN_TTL_MS / 60_000
            )),
            Ok(Asked::AlreadyPending(r)) => ToolOutput::ok(format!(
                "A shutdown request to {} is already pending: {} (no new request opened). Wait for its shutdown_response.",
                r.to, r.id
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `shutdown_response`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShutdownResponseInput {
    /// The id of the shutdown request being answered.
    pub request_id: String,
    /// True to shut down after this step, false to keep working.
    pub approve: bool,
    /// Why (required in spirit when rejecting).
    #[serde(default)]
    pub reason: Option<String>,
}

/// `shutdown_response{request_id, approve, reason?}` (teammate): answers a shutdown request.
pub struct ShutdownResponse {
    shared: Arc<TeamShared>,
    epoch: u64,
    stop: Arc<AtomicBool>,
}

impl ShutdownResponse {
    /// The tool for one incarnation, holding its agent's stop flag.
    pub fn new(shared: Arc<TeamShared>, epoch: u64, stop: Arc<AtomicBool>) -> ShutdownResponse {
        ShutdownResponse {
            shared,
            epoch,
            stop,
        }
    }
}

#[async_trait]
impl Tool for ShutdownResponse {
    fn name(&self) -> &str {
        "shutdown_response"
    }
    fn description(&self) -> &str {
        "Answer a shutdown request from the lead. approve: true finishes the tool calls of your current step, then you exit; approve: false keeps you working (give the reason)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ShutdownResponseInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SHUTDOWN_RESPONSE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ShutdownResponseInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        match answer_shutdown(
            &*self.shared,
            &ctx.agent,
            self.epoch,
            &input.request_id,
            input.approve,
            input.reason,
        )
        .await
        {
            Ok(r) if input.approve => {
                // The loop ends the turn once this round's tool calls are done.
                self.stop.store(true, Ordering::SeqCst);
                ToolOutput::ok(format!(
                    "Shutdown request {} approved; the lead has been told. Your current step's tool calls finish, then you exit — start nothing new.",
                    r.id
                ))
            }
            Ok(r) => ToolOutput::ok(format!(
                "Shutdown request {} rejected; the lead has been told why. Keep working.",
                r.id
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Refuses every tool call of an incarnation that was stopped from elsewhere (force-stopped
/// from another terminal, or replaced), and ends its turn after the calls in flight.
pub struct StopGate {
    shared: Arc<TeamShared>,
    name: String,
    epoch: u64,
    stop: Arc<AtomicBool>,
}

impl StopGate {
    /// The gate of one incarnation.
    pub fn new(shared: Arc<TeamShared>, name: &str, epoch: u64, stop: Arc<AtomicBool>) -> StopGate {
        StopGate {
            shared,
            name: name.to_string(),
            epoch,
            stop,
        }
    }
}

#[async_trait::async_trait]
impl ToolGate for StopGate {
    async fn check(&self, tool: &str, _effect: Effect, _input: &Value) -> Option<String> {
        let ended = super::incarnation_ended(&*self.shared.store, &self.name, self.epoch);
        if !ended.await {
            return None;
        }
        self.stop.store(true, Ordering::SeqCst);
        Some(format!(
            "{tool} was not run: you have been stopped (force-stopped, or replaced by a newer '{}'). Do nothing more.",
            self.name
        ))
    }
}
