//! `troupe -p`: one prompt, no questions asked, a result printed in the chosen format, and an
//! exit code scripts can rely on (0 success, 1 failure). With a team, the run ends only when
//! the team has settled, or when `--team-timeout` runs out.

use crate::args::{Cli, OutputFormat};
use crate::cost::cost_usd;
use crate::render::json::{RunResult, Subtype};
use crate::render::sanitize::terminal;
use crate::render::{stream_json, text};
use crate::setup::lead;
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::io::{IsTerminal, Read};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use troupe_agent::{Agent, AgentError, AgentEvent, RefuseApprover, SessionEndReason, TurnEnd};
use troupe_team::wake::WakeListener;
use troupe_team::{Notice, NoticeSink, SettleState, Team, LEAD};
use troupe_tools::background::Jobs;

/// How long exit waits for in-process teammates to finish their round before aborting them.
pub const STOP_LIMIT: Duration = Duration::from_secs(30);

/// The prompt from the argument, else from stdin.
fn read_prompt(cli: &Cli) -> Result<String> {
    if let Some(p) = &cli.prompt {
        if !p.trim().is_empty() {
            return Ok(p.clone());
        }
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("no prompt: pass it as an argument (troupe -p \"…\") or on stdin (echo \"…\" | troupe -p)");
    }
    let mut text = String::new();
    stdin
        .lock()
        .read_to_string(&mut text)
        .context("reading the prompt from stdin")?;
    if text.trim().is_empty() {
        bail!("no prompt: stdin was empty; pass it as an argument (troupe -p \"…\") or on stdin");
    }
    Ok(text)
}

/// How the lead's work went, across the first turn and the turns mail woke it for.
struct Progress {
    text: String,
    model_calls: u32,
    end: TurnEnd,
}

/// Why a headless run failed.
enum RunFailure {
    Agent(AgentError),
    Team(String),
}

/// Where team notices go; the session id is filled in once setup has resolved it.
fn notice_sink(format: OutputFormat, verbose: bool, session: Arc<OnceLock<String>>) -> NoticeSink {
    match format {
        OutputFormat::StreamJson => Some(Arc::new(move |notice: Notice| {
            let session_id = session.get().map(String::as_str).unwrap_or("");
            let value = match notice {
                Notice::Status {
                    name,
                    status,
                    detail,
                } => {
                    json!({"type": "system", "subtype": "teammate_status", "agent": name, "status": status, "detail": detail, "session_id": session_id})
                }
                Notice::Tool {
                    agent,
                    tool,
                    summary,
                } => {
                    json!({"type": "system", "subtype": "teammate_tool", "agent": agent, "tool": tool, "summary": summary, "session_id": session_id})
                }
                Notice::Mail {
                    from,
                    to,
                    kind,
                    content,
                } => {
                    json!({"type": "system", "subtype": "mail", "from": from, "to": to, "kind": kind, "content": content, "session_id": session_id})
                }
            };
            stream_json::emit(&value);
        })),
        OutputFormat::Text if verbose => Some(Arc::new(|notice: Notice| {
            eprintln!("{}", terminal(&text::notice_line(&notice)))
        })),
        OutputFormat::Text | OutputFormat::Json => None,
    }
}

async fn work(
    agent: &mut Agent,
    team: &Team,
    prompt: String,
    timeout: Duration,
    observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<Progress, RunFailure> {
    let mut wake = WakeListener::bind(&team.shared().store, LEAD)
        .map_err(|e| RunFailure::Team(format!("lead wake socket: {e}")))?;
    let jobs = agent.background().cloned();
    let mut job_changes = jobs.as_ref().map(Jobs::subscribe);
    let first = agent
        .run_turn(Some(prompt), observe)
        .await
        .map_err(RunFailure::Agent)?;
    let mut progress = Progress {
        text: first.text,
        model_calls: first.model_calls,
        end: first.end,
    };
    let deadline = Instant::now() + timeout;
    while progress.end != TurnEnd::MaxTurns {
        // A finished background command wakes the lead the way mail does.
        let notified = jobs.as_ref().is_some_and(Jobs::has_pending);
        let state = match notified {
            true => SettleState::LeadHasMail,
            false => team
                .settle_state()
                .map_err(|e| RunFailure::Team(e.to_string()))?,
        };
        // The lead's own background commands keep the run going like a working teammate.
        let mut busy = match state {
            SettleState::LeadHasMail => {
                let turn = agent
                    .run_turn(None, observe)
                    .await
                    .map_err(RunFailure::Agent)?;
                progress.model_calls += turn.model_calls;
                if turn.end != TurnEnd::Nothing {
                    progress.text = turn.text;
                    progress.end = turn.end;
                }
                continue;
            }
            SettleState::Settled => Vec::new(),
            SettleState::Busy(names) => names,
        };
        if let Some(jobs) = &jobs {
            busy.extend(
                jobs.running()
                    .into_iter()
                    .map(|j| format!("the lead's background command {} ({})", j.id, j.command)),
            );
        }
        if busy.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(RunFailure::Team(format!(
                "the team did not settle within --team-timeout {}s; still working: {}",
                timeout.as_secs(),
                busy.join(", ")
            )));
        }
        let job_change = async {
            let changed = match job_changes.as_mut() {
                Some(changes) => changes.changed().await.is_ok(),
                None => false,
            };
            if !changed {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = team.wait_for_change(&mut wake, deadline - now) => {}
            () = job_change => {}
        }
    }
    Ok(progress)
}

/// Runs headless and returns the process exit code.
pub fn run(cli: &Cli) -> Result<i32> {
    let started = Instant::now();
    let prompt = read_prompt(cli)?;
    let args = &cli.run;
    let format = args.output_format;
    let session_cell = Arc::new(OnceLock::new());
    let mut lead = lead(
        args,
        Arc::new(RefuseApprover),
        notice_sink(format, args.verbose, session_cell.clone()),
    )?;
    let session_id = lead.run.session_id.clone();
    let _ = session_cell.set(session_id.clone());
    if format == OutputFormat::StreamJson {
        stream_json::emit(&stream_json::init(
            &session_id,
            &lead.run.model.model,
            &lead.run.workspace.display().to_string(),
            &lead
                .agent
                .tools()
                .names()
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>(),
            &lead.run.mode.to_string(),
            crate::mcp::init_servers(&lead.mcp),
        ));
    }
    let verbose = args.verbose;
    let sid = session_id.clone();
    let mut observe = move |event: AgentEvent<'_>| match format {
        OutputFormat::StreamJson => {
            if let Some(line) = stream_json::event(&sid, LEAD, &event) {
                stream_json::emit(&line);
            }
        }
        OutputFormat::Text if verbose => text::render(text::Sink::Stderr, "", &event, false),
        OutputFormat::Text | OutputFormat::Json => {}
    };
    let timeout = Duration::from_secs(args.team_timeout);
    let runtime = &lead.runtime;
    let outcome = runtime.block_on(work(
        &mut lead.agent,
        &lead.team,
        prompt,
        timeout,
        &mut observe,
    ));
    runtime.block_on(lead.agent.end_session(SessionEndReason::Exit));
    runtime.block_on(lead.team.stop_all(STOP_LIMIT));
    lead.mcp.shutdown();
    // Nothing a tool started may outlive the run, even what left its call behind.
    troupe_tools::process::end_all();
    let (subtype, result, num_turns) = match outcome {
        Ok(p) if p.end == TurnEnd::MaxTurns => (
            Subtype::ErrorMaxTurns,
            format!("stopped after --max-turns {} model calls", p.model_calls),
            p.model_calls,
        ),
        Ok(p) => (Subtype::Success, p.text, p.model_calls),
        Err(RunFailure::Agent(e)) => (Subtype::ErrorDuringExecution, e.to_string(), 0),
        Err(RunFailure::Team(e)) => (Subtype::ErrorDuringExecution, e, 0),
    };
    // Subagents work for the lead: their tokens are the lead's.
    let mut usage = lead.agent.usage();
    usage.add(&lead.subagents.usage());
    let teammates = lead
        .team
        .roster()
        .map(|r| {
            r.members
                .iter()
                .map(|m| json!({"name": m.name, "role": m.role, "status": m.status, "last_report": m.last_report, "usage": m.usage}))
                .collect()
        })
        .unwrap_or_default();
    let report = RunResult {
        subtype,
        result,
        num_turns,
        duration_ms: started.elapsed().as_millis() as u64,
        duration_api_ms: lead.agent.api_ms(),
        session_id,
        usage,
        total_cost_usd: cost_usd(&lead.run.model.model, &usage),
        teammates,
        todos: lead.agent.todos(),
    };
    match format {
        OutputFormat::Text => {
            if subtype.is_error() {
                eprintln!("troupe: {}", terminal(&report.result));
            } else {
                println!("{}", terminal(&report.result));
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => stream_json::emit(&report.to_json()),
    }
    Ok(if subtype.is_error() { 1 } else { 0 })
}
