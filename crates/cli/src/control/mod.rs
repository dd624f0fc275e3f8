//! `troupe -p --input-format stream-json`: a long-lived headless session driven over stdin and
//! stdout the way the Claude Agent SDK drives Claude Code. User messages arrive as JSON lines
//! and each gets its turn (the team's work included) and a `result`; control requests
//! (`initialize`, `interrupt`, `set_permission_mode`, `set_model`) are answered with
//! `control_response`s; with `--permission-prompt-tool stdio`, permission questions go out as
//! `can_use_tool` requests. The session ends when stdin closes.

pub mod approver;
pub mod hooks;
pub mod initialize;
pub mod input;
pub mod mcp;

use crate::args::{Cli, OutputFormat};
use crate::headless::{
    end_run, init_event, notice_sink, over_budget, run_result, work, Events, RunFailure,
};
use crate::render::stream_json::{self, Stream};
use crate::setup::{lead, Lead};
use anyhow::{bail, Result};
use input::Incoming;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use troupe_agent::permissions::PermissionMode;
use troupe_agent::{AgentEvent, Approver, RefuseApprover};
use troupe_hooks::Callbacks;
use troupe_model::Thinking;
use troupe_team::LEAD;

/// A change the controlling process asked for, applied between turns.
enum Change {
    Mode(PermissionMode),
    Model(String),
    /// `set_max_thinking_tokens`: a budget, 0 for none, `None` for the session's default.
    Thinking(Option<u32>),
}

/// Runs the session and returns the exit code: 0 when stdin closed after the last result,
/// 1 when the last prompt failed.
pub fn run(cli: &Cli) -> Result<i32> {
    let args = &cli.run;
    if args.output_format != OutputFormat::StreamJson {
        bail!("--input-format stream-json needs --output-format stream-json");
    }
    if cli.prompt.as_deref().is_some_and(|p| !p.trim().is_empty()) {
        bail!("--input-format stream-json reads the prompts from stdin; drop the prompt argument");
    }
    if !args.claude.file.is_empty() {
        eprintln!("troupe: note: --file applies to a text prompt; with --input-format stream-json send the files' text in the messages");
    }
    let pending = Arc::new(input::Pending::default());
    let approver: Arc<dyn Approver> = match args.contract.permission_prompt_tool.as_deref() {
        None => Arc::new(RefuseApprover),
        Some("stdio") => Arc::new(approver::ControlApprover::new(
            pending.clone(),
            crate::setup::workspace_root(&args.agent)?,
        )),
        Some(other) => bail!(
            "--permission-prompt-tool {other}: only `stdio` (the Agent SDK's control protocol) is supported"
        ),
    };
    // Before the lead is built: its hooks call the SDK's callbacks once `initialize` names them.
    let callbacks = Arc::new(Callbacks::new(Arc::new(hooks::ControlCallbacks::new(
        pending.clone(),
    ))));
    crate::hooks::use_sdk_callbacks(callbacks.clone());
    crate::mcp::use_sdk_servers(troupe_mcp::SdkBridge(Arc::new(mcp::ControlMcp::new(
        pending.clone(),
    ))));
    // The SDK's answers to troupe's requests (and its servers' messages) come on stdin; its
    // first line is `initialize`, whose fields shape the lead, so it is read before the lead
    // is built and answered after.
    let mut incoming = input::spawn_reader(pending);
    let mut first = incoming.blocking_recv();
    let mut shaped = args.clone();
    if let Some(Incoming::Control { request, .. }) = &first {
        if request.get("subtype").and_then(Value::as_str) == Some("initialize") {
            initialize::apply(&mut shaped, request).map_err(anyhow::Error::msg)?;
        }
    }
    let args = &shaped;
    let session_cell = Arc::new(OnceLock::new());
    let mut lead = lead(
        args,
        approver,
        notice_sink(OutputFormat::StreamJson, args.verbose, session_cell.clone()),
        crate::trust::Asking::Script,
    )?;
    let _ = session_cell.set(lead.run.session_id.clone());
    crate::mcp::warn_unusable(&lead.mcp);
    crate::mcp::wait_for_first_call(&lead.mcp, lead.agent.settings(), &lead.runtime);
    let events = Events::new(OutputFormat::StreamJson, false);
    let stream = Arc::new(Mutex::new(Stream::new(
        &lead.run.session_id,
        LEAD,
        args.contract.include_partial_messages,
        &lead.run.workspace,
    )));
    let mut initialized = false;
    let mut queued: VecDeque<String> = VecDeque::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut last_failed = false;
    let timeout = Duration::from_secs(args.team_timeout);
    loop {
        let prompt = match queued.pop_front() {
            Some(prompt) => prompt,
            None => match first
                .take()
                .or_else(|| lead.runtime.block_on(incoming.recv()))
            {
                None => break,
                Some(Incoming::User(text)) => text,
                Some(Incoming::Control { id, request }) => {
                    let answer =
                        control(&lead, &callbacks, &request, &mut changes, &mut initialized);
                    apply(&mut lead, &mut changes);
                    respond(&id, answer);
                    continue;
                }
            },
        };
        if !initialized {
            // A client that skipped `initialize` still gets the session's description first.
            events.push(init_event(&lead));
            initialized = true;
        }
        if args.sdk.replay_user_messages {
            events.push(replayed(&lead.run.session_id, &prompt));
        }
        let started = Instant::now();
        let custom = lead.custom.clone();
        let begun = lead.runtime.block_on(crate::slash::begin(
            &mut lead.agent,
            prompt,
            &custom.commands,
            &lead.mcp,
        ));
        let (prompt, command) = match begun {
            Ok(begun) => begun,
            Err(why) => {
                let report = run_result(&lead, Err(RunFailure::Team(why)), started, None, None);
                last_failed = true;
                events.push(report.to_json());
                continue;
            }
        };
        let mut watch = crate::budget::BudgetWatch::new(
            args.contract.max_budget_usd,
            crate::headless::spent_usd(&lead),
            lead.agent.stop_flag(),
        );
        let mut observe = {
            let (events, stream) = (events.clone(), stream.clone());
            move |event: AgentEvent<'_>| {
                watch.observe(&event);
                let lines = stream
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .event(&event);
                for line in lines {
                    events.push(line);
                }
            }
        };
        let outcome = {
            let Lead {
                agent,
                team,
                runtime,
                ..
            } = &mut lead;
            runtime.block_on(async {
                let turn = work(agent, team, Some(prompt), timeout, &mut observe);
                tokio::pin!(turn);
                loop {
                    tokio::select! {
                        outcome = &mut turn => break outcome,
                        next = incoming.recv() => match next {
                            Some(Incoming::User(text)) => queued.push_back(text),
                            Some(Incoming::Control { id, request }) => {
                                if request.get("subtype").and_then(Value::as_str) == Some("interrupt") {
                                    respond(&id, Ok(json!({})));
                                    break Err(RunFailure::Interrupted);
                                }
                                let answer = busy_control(&request, &mut changes);
                                respond(&id, answer);
                            }
                            // Stdin closed mid-turn: the turn finishes, then the session ends.
                            None => break (&mut turn).await,
                        },
                    }
                }
            })
        };
        command.end(&mut lead.agent);
        if matches!(outcome, Err(RunFailure::Interrupted)) {
            if let Err(e) = lead.agent.repair() {
                eprintln!("troupe: error: after the interrupt: {e}");
            }
        }
        let outcome = over_budget(&lead, args.contract.max_budget_usd, outcome);
        let (stop_reason, ttft) = {
            let mut stream = stream.lock().unwrap_or_else(PoisonError::into_inner);
            (stream.last_stop_reason.take(), stream.take_ttft(started))
        };
        let report = run_result(&lead, outcome, started, stop_reason, ttft);
        last_failed = report.subtype.is_error();
        events.push(report.to_json());
        apply(&mut lead, &mut changes);
    }
    end_run(&mut lead);
    lead.close();
    Ok(if last_failed { 1 } else { 0 })
}

/// Writes the response to control request `id`.
fn respond(id: &str, answer: Result<Value, String>) {
    let response = match answer {
        Ok(payload) => json!({"subtype": "success", "request_id": id, "response": payload}),
        Err(error) => json!({"subtype": "error", "request_id": id, "error": error}),
    };
    stream_json::emit(&json!({"type": "control_response", "response": response}));
}

/// Answers a control request between turns.
fn control(
    lead: &Lead,
    callbacks: &Callbacks,
    request: &Value,
    changes: &mut Vec<Change>,
    initialized: &mut bool,
) -> Result<Value, String> {
    match request.get("subtype").and_then(Value::as_str) {
        Some("initialize") => {
            // A callback that cannot be registered must not leave its guard off silently: the
            // SDK sees the error and the session does not start.
            let registered = callbacks
                .register(request.get("hooks").unwrap_or(&Value::Null))
                .map_err(|why| format!("the hooks of initialize cannot be used: {why}"))?;
            *initialized = true;
            stream_json::emit(&init_event(lead));
            Ok(json!({
                "commands": lead.custom.described(&lead.mcp),
                "agents": lead.subagents.agent_names(),
                "output_style": lead.custom.style_name(),
                "available_output_styles": lead.custom.style_names,
                "models": [],
                "account": {},
                "hooks_applied": registered > 0,
                "hook_on_failure_supported": true,
                "pid": std::process::id(),
            }))
        }
        Some("interrupt") => Ok(json!({})),
        Some("mcp_status") => Ok(json!({"mcpServers": crate::mcp::init_servers(&lead.mcp)})),
        _ => busy_control(request, changes),
    }
}

/// Answers a control request that does not need the agent (also while a turn runs).
fn busy_control(request: &Value, changes: &mut Vec<Change>) -> Result<Value, String> {
    let field = |key: &str| request.get(key).and_then(Value::as_str);
    match field("subtype") {
        Some("set_permission_mode") => {
            let mode: PermissionMode = field("mode")
                .ok_or("set_permission_mode without a mode")?
                .parse()
                .map_err(|e: troupe_agent::permissions::ModeError| e.to_string())?;
            changes.push(Change::Mode(mode));
            Ok(json!({}))
        }
        Some("set_model") => {
            let model = field("model").ok_or("set_model without a model")?;
            changes.push(Change::Model(model.to_string()));
            Ok(json!({}))
        }
        Some("set_max_thinking_tokens") => {
            let budget = match request.get("max_thinking_tokens") {
                None | Some(Value::Null) => None,
                Some(value) => Some(
                    value
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or("max_thinking_tokens must be a whole number of tokens or null")?,
                ),
            };
            changes.push(Change::Thinking(budget));
            Ok(json!({}))
        }
        Some("initialize") => Err("already initialized".to_string()),
        Some("mcp_status") => Ok(json!({"mcpServers": []})),
        Some(other) => Err(format!(
            "troupe does not support the control request `{other}`"
        )),
        None => Err("a control request without a subtype".to_string()),
    }
}

/// A user message from stdin echoed back as `--replay-user-messages` asks, marked as a replay.
fn replayed(session_id: &str, prompt: &str) -> Value {
    json!({
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "session_id": session_id,
        "parent_tool_use_id": null,
        "uuid": crate::render::stream_json::uuid(),
        "isReplay": true,
    })
}

/// Applies the changes asked for, now that no turn runs.
fn apply(lead: &mut Lead, changes: &mut Vec<Change>) {
    for change in changes.drain(..) {
        match change {
            Change::Mode(mode) => lead.agent.set_permission_mode(mode),
            Change::Model(name) => {
                lead.run.model.model = lead.run.model.named(&name, &troupe_tools::child_env::var);
                // The same client (its bound, its shared prefixes): the name goes with each
                // request.
                let client = lead.agent.model_client();
                switch_model(lead, client);
            }
            Change::Thinking(budget) => {
                lead.run.model.reasoning.thinking = match budget {
                    None => Thinking::Unset,
                    Some(0) => Thinking::Off,
                    Some(budget) => Thinking::Budget(budget),
                };
                // The reasoning is the client's: a new one, bounded as the run's.
                let client = crate::compose::model_client(&lead.run.model, lead.agent.settings());
                switch_model(lead, client);
            }
        }
    }
}

/// Puts `lead.run.model` in force through `client`: for the lead, and for every teammate and
/// subagent made from now on.
pub(crate) fn switch_model(lead: &mut Lead, client: Arc<dyn troupe_model::Model>) {
    let config = lead.run.model.clone();
    lead.agent.set_model(client.clone(), config.model.clone());
    lead.team.shared().config.recipe.set_model(config, client);
}
