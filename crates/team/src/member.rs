//! One teammate's life: build its agent, work, report to the lead, go idle, wake on mail,
//! until it shuts down or fails.

use crate::extension::TeammateExtension;
use crate::notice::Notice;
use crate::prompt::teammate_identity;
use crate::protocols::permission::EscalatingApprover;
use crate::shared::TeamShared;
use crate::spec::{MemberSpec, LEAD};
use crate::wake::WakeListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_agent::{Agent, AgentBuilder, AgentEvent, TurnEnd};
use troupe_model::ModelConfig;
use troupe_protocol::{AgentStatus, EventKind, MailKind};
use troupe_store::{MailboxStore, RosterStore, TranscriptStore};
use troupe_tools::Workspace;

/// Model calls one work phase may make before it is cut off (a runaway guard).
const MAX_ROUNDS_PER_PHASE: u32 = 200;

/// Starts a member as a task with a supervisor that turns a panic into `failed` and tells the lead.
pub fn spawn_task(shared: Arc<TeamShared>, spec: MemberSpec, stop: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let name = spec.name.clone();
        let epoch = spec.epoch;
        let task = tokio::spawn(run(shared.clone(), spec, stop));
        let failure = match task.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(join) => Some(format!("its task panicked: {join}")),
        };
        if let Some(reason) = failure {
            fail(&shared, &name, epoch, &reason);
        }
    });
}

/// Marks a member failed and tells the lead; the rest of the team keeps working.
pub fn fail(shared: &TeamShared, name: &str, epoch: u64, reason: &str) {
    shared.record(EventKind::Error, Some(name), reason.to_string());
    let superseded = shared
        .store
        .roster()
        .ok()
        .and_then(|r| r.get(name).map(|m| m.epoch != epoch || m.status.is_ended()))
        .unwrap_or(false);
    if superseded {
        return; // stopped, shut down or replaced already: nothing to report
    }
    // The mail goes first: whoever sees the member ended must also find the lead's mail.
    let text = format!("teammate '{name}' failed and stopped: {reason}");
    if let Err(e) = shared.send(troupe_protocol::Envelope::new(
        MailKind::Message,
        name,
        LEAD,
        text,
        troupe_agent::transcript::now_ms(),
    )) {
        tracing::warn!(error = %e, "could not tell the lead that {name} failed");
    }
    shared.set_status(name, epoch, AgentStatus::Failed, reason);
}

/// Builds the member's agent — in this process or in its own — through the one builder: the
/// team's settings and policy, the escalating approver, and the teammate extension (its mail and
/// protocol tools, gates, prompt sections and mailbox); its own transcript.
pub fn build_agent(shared: &Arc<TeamShared>, spec: &MemberSpec) -> Result<Agent, String> {
    let config = &shared.config;
    let workspace = Workspace::new(&config.workspace).map_err(|e| e.to_string())?;
    let model = ModelConfig {
        model: spec
            .model
            .clone()
            .unwrap_or_else(|| config.model.model.clone()),
        ..config.model.clone()
    };
    let transcript = shared
        .store
        .transcript_path(&spec.name)
        .map_err(|e| e.to_string())?;
    let extension =
        TeammateExtension::new(shared.clone(), spec.clone()).map_err(|e| e.to_string())?;
    let approver = EscalatingApprover::new(shared.clone(), &spec.name, spec.epoch);
    let builder = AgentBuilder::new(
        spec.name.clone(),
        Arc::new(workspace),
        model.build(),
        model.model.clone(),
    );
    let agent = builder
        .identity(teammate_identity(&config.team, spec))
        .settings(config.settings.clone())
        .policy(config.policy.clone())
        .approver(Arc::new(approver))
        .max_tokens(config.max_tokens)
        .max_rounds(Some(MAX_ROUNDS_PER_PHASE))
        .extension(Arc::new(extension))
        .transcript(transcript)
        .build()
        .map_err(|e| e.to_string())?;
    shared
        .protocols
        .register_agent(&spec.name, spec.epoch, agent.stop_flag());
    Ok(agent)
}

/// The member's loop. Returns `Err` with a reason when it fails.
pub async fn run(
    shared: Arc<TeamShared>,
    spec: MemberSpec,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    // Listen before anything else, so no wake sent after this point is missed.
    let mut wake = WakeListener::bind(&shared.store, &spec.name).map_err(|e| e.to_string())?;
    let mut agent = build_agent(&shared, &spec)?;
    let stop_flag = agent.stop_flag();
    let mut input = spec.prompt.clone();
    loop {
        shared.set_status(&spec.name, spec.epoch, AgentStatus::Working, "");
        let name = spec.name.clone();
        let sh = shared.clone();
        let mut observe = move |event: AgentEvent<'_>| {
            if let AgentEvent::ToolStarted {
                name: tool, input, ..
            } = event
            {
                let summary = crate::tools::summarize(tool, input);
                sh.set_activity(&name, Some(format!("{tool}: {summary}")), None);
                sh.notice(Notice::Tool {
                    agent: name.clone(),
                    tool: tool.to_string(),
                    summary,
                });
            }
        };
        if stop.load(Ordering::SeqCst) {
            stop_flag.store(true, Ordering::SeqCst);
        }
        let outcome = agent
            .run_turn(input.take(), &mut observe)
            .await
            .map_err(|e| e.to_string())?;
        shared.set_activity(&spec.name, None, Some(agent.usage()));
        if outcome.end != TurnEnd::Nothing {
            let report = if outcome.text.trim().is_empty() {
                format!(
                    "({} finished a work phase without a final message)",
                    spec.name
                )
            } else {
                outcome.text.clone()
            };
            shared.set_report(&spec.name, &report);
            shared
                .send(troupe_protocol::Envelope::new(
                    MailKind::TaskResult,
                    &spec.name,
                    LEAD,
                    report,
                    troupe_agent::transcript::now_ms(),
                ))
                .map_err(|e| e.to_string())?;
        }
        if stop.load(Ordering::SeqCst) {
            // The process is exiting (`stop_all`), which is not a shutdown: the member stays
            // idle in the roster so `--continue` respawns it.
            shared.set_status(&spec.name, spec.epoch, AgentStatus::Idle, "");
            return Ok(());
        }
        if outcome.end == TurnEnd::Stopped {
            shared.set_status(&spec.name, spec.epoch, AgentStatus::Shutdown, "");
            return Ok(());
        }
        shared.set_status(&spec.name, spec.epoch, AgentStatus::Idle, "");
        // Idle until mail arrives (or a stop is requested).
        loop {
            if stop.load(Ordering::SeqCst) {
                // Process exit while idle: nothing to record, the member stays resumable.
                return Ok(());
            }
            // Force-stopped (possibly from another terminal) or replaced while idle.
            if stop_flag.load(Ordering::SeqCst)
                || crate::protocols::incarnation_ended(&shared.store, &spec.name, spec.epoch)
            {
                shared.set_status(&spec.name, spec.epoch, AgentStatus::Stopped, "");
                return Ok(());
            }
            let unread = shared.store.peek(&spec.name).map_err(|e| e.to_string())?;
            if !unread.is_empty() {
                break;
            }
            wake.wait().await;
        }
    }
}
