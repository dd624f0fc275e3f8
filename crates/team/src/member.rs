//! One teammate's life: build its agent, work, report to the lead, go idle, wake on mail,
//! until it shuts down or fails.

use crate::inbox::MailboxInbox;
use crate::notice::Notice;
use crate::prompt::teammate_system;
use crate::runtime::{TeamShared, LEAD};
use crate::tools::{ReadInbox, SendMessage};
use crate::wake::WakeListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_agent::{Agent, AgentConfig, AgentEvent, TurnEnd};
use troupe_model::ModelConfig;
use troupe_protocol::{AgentStatus, EventKind, MailKind};
use troupe_store::{MailboxStore, RosterStore, TranscriptStore};
use troupe_tools::{Registry, ToolContext, Workspace};

/// Model calls one work phase may make before it is cut off (a runaway guard).
const MAX_ROUNDS_PER_PHASE: u32 = 200;

/// Who to run.
#[derive(Debug, Clone)]
pub struct MemberSpec {
    /// Name.
    pub name: String,
    /// Role.
    pub role: String,
    /// Incarnation.
    pub epoch: u64,
    /// First instructions; `None` when resuming from a transcript.
    pub prompt: Option<String>,
    /// Model name, if not the lead's.
    pub model: Option<String>,
}

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

/// Builds the member's agent: built-in tools plus the teammate tools, its own transcript and inbox.
pub fn build_agent(shared: &Arc<TeamShared>, spec: &MemberSpec) -> Result<Agent, String> {
    let config = &shared.config;
    let workspace = Workspace::new(&config.workspace).map_err(|e| e.to_string())?;
    let ctx = ToolContext::new(Arc::new(workspace), spec.name.clone())
        .with_sandbox_config(config.sandbox.clone());
    let mut tools = Registry::with_builtins();
    tools.register(Arc::new(SendMessage::new(shared.clone())));
    tools.register(Arc::new(ReadInbox::new(shared.clone())));
    let model = ModelConfig {
        model: spec
            .model
            .clone()
            .unwrap_or_else(|| config.model.model.clone()),
        ..config.model.clone()
    };
    let tool_names: Vec<String> = tools.names().into_iter().map(str::to_string).collect();
    let system = teammate_system(shared, spec, &tool_names);
    let agent_config = AgentConfig {
        name: spec.name.clone(),
        model: model.model.clone(),
        max_tokens: config.max_tokens,
        max_rounds: Some(MAX_ROUNDS_PER_PHASE),
    };
    let mut agent = Agent::new(
        agent_config,
        model.build(),
        system,
        tools,
        ctx,
        config.policy.clone(),
        Arc::new(crate::protocols::permission::EscalatingApprover::new(
            shared.clone(),
            &spec.name,
            spec.epoch,
        )),
    );
    crate::protocols::install_teammate(shared, spec, &mut agent)?;
    let transcript = shared
        .store
        .transcript_path(&spec.name)
        .map_err(|e| e.to_string())?;
    agent
        .attach_transcript(&transcript)
        .map_err(|e| e.to_string())?;
    agent.set_inbox(Arc::new(MailboxInbox::new(
        shared.store.clone(),
        &spec.name,
    )));
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
