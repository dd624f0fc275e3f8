//! `troupe -p --input-format stream-json`: a long-lived headless session driven over stdin and
//! stdout the way the Claude Agent SDK drives Claude Code. User messages arrive as JSON lines
//! and each gets its turn (the team's work included) and a `result`; control requests
//! (`initialize`, `interrupt`, `set_permission_mode`, `set_model`) are answered with
//! `control_response`s; with `--permission-prompt-tool stdio`, permission questions go out as
//! `can_use_tool` requests. The session ends when stdin closes.

pub mod approver;
mod front;
pub mod hooks;
pub mod initialize;
pub mod input;
pub mod mcp;

use crate::args::{Cli, OutputFormat};
use crate::headless::init_event;
use crate::lead_run::{between_turns, end_run, switch_model};
use crate::lead_wakes::LeadWakes;
use crate::render::script::{notice_sink, Events};
use crate::render::stream_json::{self, Stream};
use crate::setup::{lead, Crew, Lead, RunContext};
use anyhow::{bail, Result};
use input::Incoming;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;
use troupe_agent::permissions::PermissionMode;
use troupe_agent::{Agent, Approver, RefuseApprover};
use troupe_driver::{Driver, Event, Flow, Op};
use troupe_hooks::Callbacks;
use troupe_model::Thinking;
use troupe_team::LEAD;

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
    let first = incoming.blocking_recv();
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
    crate::mcp::warn_unusable(&lead.crew.mcp);
    crate::mcp::wait_for_first_call(&lead.crew.mcp, lead.agent.settings(), &lead.runtime);
    let events = Events::new(OutputFormat::StreamJson, false);
    let stream = Arc::new(Mutex::new(Stream::new(
        &lead.run.session_id,
        LEAD,
        args.contract.include_partial_messages,
        &lead.run.workspace,
    )));
    let watch = Arc::new(Mutex::new(crate::budget::BudgetWatch::new(
        None,
        0.0,
        lead.agent.stop_flag(),
    )));
    let mut sink = {
        let (events, stream, watch) = (events.clone(), stream.clone(), watch.clone());
        move |event: Event<'_>| match event {
            Event::Agent(event) => {
                watch
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .observe(&event);
                let lines = stream
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .event(&event);
                for line in lines {
                    events.push(line);
                }
            }
            other => between_turns(&other),
        }
    };
    let policy = crate::lead_run::settling(args);
    let last_failed = {
        let Lead {
            agent,
            run,
            crew,
            runtime,
            ..
        } = &mut lead;
        let crew = &*crew;
        let mut front = front::Sdk {
            run,
            crew,
            args,
            callbacks: &callbacks,
            incoming,
            first,
            events,
            stream,
            watch,
            initialized: false,
            command: None,
            started: Instant::now(),
            last_failed: false,
            images: Default::default(),
        };
        runtime.block_on(async {
            match LeadWakes::bind(&crew.team).await {
                Ok(wakes) => {
                    let mut driver = Driver::new(agent, Box::new(wakes), policy);
                    driver.run(Flow::Continue, &mut front, &mut sink).await;
                }
                Err(why) => eprintln!("troupe: error: {why}"),
            }
        });
        front.last_failed
    };
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

/// Answers a control request between turns; a change it asks for comes back as an operation
/// to apply now.
fn control(
    agent: &Agent,
    run: &RunContext,
    crew: &Crew,
    callbacks: &Callbacks,
    request: &Value,
    initialized: &mut bool,
) -> (Result<Value, String>, Option<Op>) {
    match request.get("subtype").and_then(Value::as_str) {
        Some("initialize") => {
            // A callback that cannot be registered must not leave its guard off silently: the
            // SDK sees the error and the session does not start.
            let registered = match callbacks.register(request.get("hooks").unwrap_or(&Value::Null))
            {
                Ok(registered) => registered,
                Err(why) => {
                    return (
                        Err(format!("the hooks of initialize cannot be used: {why}")),
                        None,
                    )
                }
            };
            *initialized = true;
            stream_json::emit(&init_event(agent, run, crew));
            let answer = json!({
                "commands": crew.custom.described(&crew.mcp),
                "agents": crew.subagents.agent_names(),
                "output_style": crew.custom.style_name(),
                "available_output_styles": crew.custom.style_names,
                "models": [],
                "account": {},
                "hooks_applied": registered > 0,
                "hook_on_failure_supported": true,
                "pid": std::process::id(),
            });
            (Ok(answer), None)
        }
        Some("interrupt") => (Ok(json!({})), None),
        Some("mcp_status") => (
            Ok(json!({"mcpServers": crate::mcp::init_servers(&crew.mcp)})),
            None,
        ),
        _ => busy_control(request),
    }
}

/// Answers a control request that does not need the agent (also while a turn runs); a change
/// it asks for comes back as an operation, applied between turns.
fn busy_control(request: &Value) -> (Result<Value, String>, Option<Op>) {
    match busy_change(request) {
        Ok(Some(op)) => (Ok(json!({})), Some(op)),
        Ok(None) => (Ok(json!({"mcpServers": []})), None),
        Err(why) => (Err(why), None),
    }
}

/// The change a control request asks for (`None`: `mcp_status`, which changes nothing).
fn busy_change(request: &Value) -> Result<Option<Op>, String> {
    let field = |key: &str| request.get(key).and_then(Value::as_str);
    match field("subtype") {
        Some("set_permission_mode") => {
            let mode = field("mode").ok_or("set_permission_mode without a mode")?;
            mode.parse::<PermissionMode>()
                .map_err(|e: troupe_agent::permissions::ModeError| e.to_string())?;
            Ok(Some(Op::SetMode(mode.to_string())))
        }
        Some("set_model") => {
            let model = field("model").ok_or("set_model without a model")?;
            Ok(Some(Op::SetModel(model.to_string())))
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
            Ok(Some(Op::SetThinking(budget)))
        }
        Some("initialize") => Err("already initialized".to_string()),
        Some("mcp_status") => Ok(None),
        Some(other) => Err(format!(
            "troupe does not support the control request `{other}`"
        )),
        None => Err("a control request without a subtype".to_string()),
    }
}

/// A user message from stdin echoed back as `--replay-user-messages` asks, marked as a replay.
fn replayed(session_id: &str, prompt: &troupe_driver::Prompt) -> Value {
    // A prompt with images is replayed as blocks: its text, then its images as sent.
    let content = match prompt.images.is_empty() {
        true => json!(prompt.text),
        false => json!(prompt.clone().into_message().content),
    };
    json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "session_id": session_id,
        "parent_tool_use_id": null,
        "uuid": crate::render::stream_json::uuid(),
        "isReplay": true,
    })
}

/// Applies a change asked for, now that no turn runs.
fn apply_change(agent: &mut Agent, run: &mut RunContext, crew: &Crew, op: Op) {
    match op {
        Op::SetMode(mode) => {
            if let Ok(mode) = mode.parse() {
                agent.set_permission_mode(mode)
            }
        }
        Op::SetModel(name) => {
            run.model.model = run.model.named(&name, &troupe_tools::child_env::var);
            // The same client (its bound, its shared prefixes): the name goes with each
            // request.
            let client = agent.model_client();
            switch_model(agent, &run.model, &crew.team, client);
        }
        Op::SetThinking(budget) => {
            run.model.reasoning.thinking = match budget {
                None => Thinking::Unset,
                Some(0) => Thinking::Off,
                Some(budget) => Thinking::Budget(budget),
            };
            // The reasoning is the client's: a new one, bounded as the run's.
            let client = crate::compose::model_client(&run.model, agent.settings());
            switch_model(agent, &run.model, &crew.team, client);
        }
        _ => {}
    }
}
