//! What a headless run reports about itself: the `system/init` event of its session and the
//! result object of a run (or, with stream-json input, of one prompt).

use crate::lead_run::{Progress, RunFailure};
use crate::render::json::{RunResult, Subtype};
use crate::render::stream_json;
use crate::setup::{Crew, RunContext};
use serde_json::{json, Value};
use std::time::Instant;
use troupe_agent::Agent;
use troupe_agent::{AgentError, TurnEnd};
use troupe_model::{ModelError, Provider};

/// Which variable the model's credentials come from, as `system/init` reports it.
fn api_key_source(run: &RunContext) -> &'static str {
    let set = |name: &str| troupe_tools::child_env::var(name).is_some_and(|v| !v.is_empty());
    match run.model.provider {
        Provider::Anthropic if set("ANTHROPIC_API_KEY") => "ANTHROPIC_API_KEY",
        Provider::Anthropic if set("ANTHROPIC_AUTH_TOKEN") => "ANTHROPIC_AUTH_TOKEN",
        Provider::OpenAi if set("OPENAI_API_KEY") => "OPENAI_API_KEY",
        Provider::Anthropic | Provider::OpenAi => "none",
    }
}

/// The `system/init` event of the lead's session.
pub(crate) fn init_event(agent: &Agent, run: &RunContext, crew: &Crew) -> Value {
    let tools: Vec<String> = agent
        .tools()
        .names()
        .into_iter()
        .map(str::to_string)
        .collect();
    stream_json::init(&stream_json::Init {
        session_id: &run.session_id,
        model: &agent.config().model,
        cwd: &run.workspace.display().to_string(),
        tools: &tools,
        permission_mode: agent.policy().mode.as_str(),
        mcp_servers: crate::mcp::init_servers(&crew.mcp),
        api_key_source: api_key_source(run),
        agents: crew.subagents.agent_names(),
        skills: crew.skills.names(),
        slash_commands: crew.custom.all_names(&crew.mcp),
        output_style: crew.custom.style_name(),
    })
}

/// The result object of a run (or, with stream-json input, of one prompt).
pub(crate) async fn run_result(
    agent: &Agent,
    run: &RunContext,
    crew: &Crew,
    outcome: Result<Progress, RunFailure>,
    started: Instant,
    stop_reason: Option<String>,
    ttft_ms: Option<u64>,
) -> RunResult {
    let mut api_error_status = None;
    let terminal_reason = match &outcome {
        Ok(p) if p.end == TurnEnd::MaxTurns => "max_turns",
        Ok(_) => "completed",
        Err(RunFailure::Interrupted) => "interrupted",
        Err(_) => "error",
    };
    let (subtype, result, num_turns) = match outcome {
        Ok(p) if p.end == TurnEnd::MaxTurns => (
            Subtype::ErrorMaxTurns,
            format!("stopped after --max-turns {} model calls", p.model_calls),
            p.model_calls,
        ),
        Ok(p) => (Subtype::Success, p.text, p.model_calls),
        Err(RunFailure::Agent(e)) => {
            if let AgentError::Model(
                ModelError::Http { status, .. } | ModelError::Auth { status, .. },
            ) = &e
            {
                api_error_status = Some(*status);
            }
            (Subtype::ErrorDuringExecution, e.to_string(), 0)
        }
        Err(RunFailure::Team(e)) => (Subtype::ErrorDuringExecution, e, 0),
        Err(RunFailure::Budget {
            reason,
            model_calls,
        }) => (Subtype::ErrorMaxBudgetUsd, reason, model_calls),
        Err(RunFailure::Interrupted) => {
            (Subtype::ErrorDuringExecution, "interrupted".to_string(), 0)
        }
    };
    // Subagents work for the lead: their tokens are the lead's, shown on a row of their own.
    let roster = crew.team.roster().await.ok();
    let agents = crate::cost::breakdown(
        &crate::lead_run::lead_usage(agent),
        crew.subagents.usage(),
        roster.as_ref(),
    );
    let (usage, total_cost_usd) = crate::cost::totals(&agents);
    let teammates = roster
        .as_ref()
        .map(|r| {
            r.members
                .iter()
                .map(|m| json!({"name": m.name, "role": m.role, "status": m.status, "last_report": m.last_report, "usage": m.usage}))
                .collect()
        })
        .unwrap_or_default();
    RunResult {
        subtype,
        result,
        num_turns,
        duration_ms: started.elapsed().as_millis() as u64,
        duration_api_ms: agent.api_ms(),
        session_id: run.session_id.clone(),
        model: agent.config().model.clone(),
        context_window: agent.context().window,
        usage,
        stop_reason,
        permission_denials: crate::render::json::claude_denials(
            agent.permission_denials(),
            &run.workspace,
        ),
        api_error_status,
        total_cost_usd,
        agents,
        teammates,
        todos: agent.todos(),
        terminal_reason,
        ttft_ms,
        structured_output: None,
    }
}
