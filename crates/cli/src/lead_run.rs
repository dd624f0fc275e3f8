//! What every front end of the lead shares around the session driver: how a script's session
//! is driven, how a run failed, what it spent, switching its model, and ending it.

use crate::args::RunArgs;
use crate::cost::cost_usd;
use crate::setup::{Crew, Lead};
use std::sync::Arc;
use std::time::Duration;
use troupe_agent::{Agent, AgentError, SessionEndReason};
use troupe_driver::{Event, Failure, Policy};

pub(crate) use troupe_driver::Progress;

/// How long exit waits for in-process teammates to finish their round before aborting them.
pub const STOP_LIMIT: Duration = Duration::from_secs(30);

/// Why a headless run failed.
pub(crate) enum RunFailure {
    Agent(AgentError),
    Team(String),
    /// `--max-budget-usd` ran out after this many model calls.
    Budget {
        reason: String,
        model_calls: u32,
    },
    /// The controlling process interrupted the turn (stream-json input).
    Interrupted,
}

impl From<Failure> for RunFailure {
    fn from(failure: Failure) -> RunFailure {
        match failure {
            Failure::Agent(e) => RunFailure::Agent(e),
            Failure::Interrupted => RunFailure::Interrupted,
            Failure::Wakes(why) => RunFailure::Team(why),
        }
    }
}

/// How a script's session is driven: each prompt settles with the team's work, within
/// `--team-timeout`.
pub(crate) fn settling(args: &RunArgs) -> Policy {
    Policy {
        settle: Some(Duration::from_secs(args.team_timeout)),
        who: "the lead".to_string(),
        agent: troupe_team::LEAD.to_string(),
    }
}

/// What a script's run says on stderr between turns (notes and errors); turn boundaries are
/// the result's business.
pub(crate) fn between_turns(event: &Event<'_>) {
    match event {
        Event::Note(line) => crate::render::sanitize::errln!("troupe: {line}"),
        Event::Error(line) => crate::render::sanitize::errln!("troupe: error: {line}"),
        Event::Agent(_) | Event::TurnStarted(_) | Event::TurnEnded(_) => {}
    }
}

/// Ends a headless run: the session hooks, the teammates at their round boundary, the MCP
/// servers, and whatever any tool started (even what left its call behind).
pub(crate) fn end_run(lead: &mut Lead) {
    lead.runtime
        .block_on(lead.agent.end_session(SessionEndReason::Exit));
    lead.runtime.block_on(lead.crew.team.stop_all(STOP_LIMIT));
    lead.crew.mcp.shutdown();
    troupe_tools::process::end_all();
}

/// What the lead and its subagents have spent so far, in US dollars.
pub(crate) fn spent_usd(agent: &Agent, crew: &Crew) -> f64 {
    let model = &agent.config().model;
    crate::cost::priced_usd(model, &agent.usage(), agent.usage_by_model())
        + cost_usd(model, &crew.subagents.usage())
}

/// `--max-budget-usd`: a run whose cost passed the budget is reported as an error (Claude
/// Code's `error_max_budget_usd`), with what it spent.
pub(crate) fn over_budget(
    agent: &Agent,
    crew: &Crew,
    budget: Option<f64>,
    outcome: Result<Progress, RunFailure>,
) -> Result<Progress, RunFailure> {
    let Some(budget) = budget else {
        return outcome;
    };
    let spent = spent_usd(agent, crew);
    match outcome {
        Ok(progress) if spent > budget => Err(RunFailure::Budget {
            reason: format!("the run cost ${spent:.4}, over --max-budget-usd {budget}"),
            model_calls: progress.model_calls,
        }),
        other => other,
    }
}

/// Puts `model` in force through `client`: for the lead, and for every teammate and
/// subagent made from now on.
pub(crate) fn switch_model(
    agent: &mut Agent,
    model: &troupe_model::ModelConfig,
    team: &troupe_team::Team,
    client: Arc<dyn troupe_model::Model>,
) {
    agent.set_model(client.clone(), model.model.clone());
    team.shared().config.recipe.set_model(model.clone(), client);
}

/// The lead's model now, its tokens, and its tokens per model called.
pub fn lead_usage(agent: &Agent) -> troupe_protocol::AgentUsage {
    troupe_protocol::AgentUsage {
        model: agent.config().model.clone(),
        usage: agent.usage(),
        by_model: agent.usage_by_model().clone(),
    }
}
