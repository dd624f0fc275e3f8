//! The front end of `troupe -p` with a text prompt: one prompt, settled with the team, then
//! `--fallback-model` and `--json-schema` as Claude Code applies them; Ctrl-C interrupts the
//! turn and the run still reports (exit 130).

use crate::lead_run::{Progress, RunFailure};
use crate::setup::RunContext;
use crate::slash::CommandTurn;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Notify;
use troupe_agent::{Agent, TurnEnd};
use troupe_driver::{Cause, Failure, Flow, Frontend, Op};
use troupe_team::Team;

/// What a `-p` run needs between its turns.
pub(crate) struct Script<'a> {
    pub(crate) run: &'a mut RunContext,
    pub(crate) team: &'a Team,
    /// `--fallback-model`: tried once when the model fails as it is worth trying another for.
    pub(crate) fallback: Option<String>,
    /// `--json-schema`: the final answer is checked against it (one retry).
    pub(crate) schema: Option<&'a Value>,
    /// The custom command the prompt named, ended once its work is done.
    pub(crate) command: Option<CommandTurn>,
    /// Ctrl-C's first press.
    pub(crate) interrupt: Arc<Notify>,
    fell_back: bool,
    retried: bool,
    /// Model calls before the `--json-schema` retry, added to its result.
    earlier_calls: u32,
    /// The run's outcome once finished, with the structured output.
    pub(crate) outcome: Option<(Result<Progress, RunFailure>, Option<Value>)>,
}

impl<'a> Script<'a> {
    pub(crate) fn new(
        run: &'a mut RunContext,
        team: &'a Team,
        interrupt: Arc<Notify>,
        command: CommandTurn,
    ) -> Script<'a> {
        Script {
            run,
            team,
            fallback: None,
            schema: None,
            command: Some(command),
            interrupt,
            fell_back: false,
            retried: false,
            earlier_calls: 0,
            outcome: None,
        }
    }
}

#[async_trait::async_trait]
impl Frontend for Script<'_> {
    async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op> {
        // The one prompt was the first work; with nothing running, the input is over.
        turn?;
        self.interrupt.notified().await;
        Some(Op::Interrupt)
    }

    async fn apply(&mut self, _agent: &mut Agent, _op: Op) -> Flow {
        Flow::Continue
    }

    async fn finished(&mut self, agent: &mut Agent, result: Result<Progress, Failure>) -> Flow {
        let mut result = result.map_err(RunFailure::from);
        if let Ok(progress) = &mut result {
            progress.model_calls += std::mem::take(&mut self.earlier_calls);
        }
        if let (false, Some(fallback), Err(RunFailure::Agent(error))) =
            (self.fell_back, &self.fallback, &result)
        {
            if crate::fallback::worth_falling_back(error) {
                self.fell_back = true;
                let failed = agent.config().model.clone();
                self.run.model.model = self
                    .run
                    .model
                    .named(fallback, &troupe_tools::child_env::var);
                crate::render::sanitize::errln!(
                    "troupe: {failed} failed ({error}); trying the turn again with --fallback-model {}",
                    self.run.model.model
                );
                let client = agent.model_client();
                crate::lead_run::switch_model(agent, &self.run.model, self.team, client);
                return Flow::Retry;
            }
        }
        if let Some(command) = self.command.take() {
            command.end(agent);
        }
        let mut structured = None;
        if let (Some(schema), Ok(progress)) = (self.schema, &result) {
            if progress.end != TurnEnd::MaxTurns {
                use crate::structured_output::{check, retry_prompt};
                match check(schema, &progress.text) {
                    Ok(value) => structured = Some(value),
                    Err(why) if !self.retried => {
                        // One more turn telling the lead what is wrong.
                        self.retried = true;
                        self.earlier_calls = progress.model_calls;
                        return Flow::Prompt(retry_prompt(&why).into());
                    }
                    Err(why) => {
                        result = Err(RunFailure::Team(format!(
                            "--json-schema: the final answer does not satisfy the schema: {why}"
                        )))
                    }
                }
            }
        }
        self.outcome = Some((result, structured));
        Flow::End
    }
}
