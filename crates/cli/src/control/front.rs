//! The front end of the SDK's stream-json session: user messages become prompts, control
//! requests are answered (at once when they need no agent, between turns otherwise), and each
//! prompt's settled work ends in a `result`.

use super::input::Incoming;
use super::{apply_change, busy_control, control, replayed, respond};
use crate::budget::BudgetWatch;
use crate::headless::{init_event, run_result};
use crate::lead_run::{over_budget, spent_usd, RunFailure};
use crate::render::script::Events;
use crate::render::stream_json::Stream;
use crate::setup::{Crew, RunContext};
use crate::slash::CommandTurn;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedReceiver;
use troupe_agent::Agent;
use troupe_driver::{Cause, Failure, Flow, Frontend, Op, Progress, Prompt};
use troupe_hooks::Callbacks;

/// The session's state between the driver's calls.
pub(super) struct Sdk<'a> {
    pub(super) run: &'a mut RunContext,
    pub(super) crew: &'a Crew,
    pub(super) args: &'a crate::args::RunArgs,
    pub(super) callbacks: &'a Callbacks,
    pub(super) incoming: UnboundedReceiver<Incoming>,
    /// The first line, read before the lead was built.
    pub(super) first: Option<Incoming>,
    pub(super) events: Events,
    pub(super) stream: Arc<Mutex<Stream>>,
    pub(super) watch: Arc<Mutex<BudgetWatch>>,
    pub(super) initialized: bool,
    /// The custom command the running prompt named.
    pub(super) command: Option<CommandTurn>,
    /// When the running prompt arrived.
    pub(super) started: Instant,
    /// Whether the last prompt failed (the exit code says so).
    pub(super) last_failed: bool,
    /// The images of the user messages handed to the driver as commands and not yet applied,
    /// in order (a command carries text only).
    pub(super) images: std::collections::VecDeque<Vec<troupe_protocol::ImageData>>,
}

impl Sdk<'_> {
    async fn next_line(&mut self) -> Option<Incoming> {
        match self.first.take() {
            Some(first) => Some(first),
            None => self.incoming.recv().await,
        }
    }
}

#[async_trait::async_trait]
impl Frontend for Sdk<'_> {
    async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op> {
        loop {
            match self.next_line().await? {
                Incoming::User(prompt) => {
                    self.images.push_back(prompt.images);
                    return Some(Op::Command(prompt.text));
                }
                Incoming::Control { id, request } if turn.is_none() => {
                    return Some(Op::Control { id, request })
                }
                Incoming::Control { id, request } => {
                    if request.get("subtype").and_then(Value::as_str) == Some("interrupt") {
                        respond(&id, Ok(serde_json::json!({})));
                        return Some(Op::Interrupt);
                    }
                    let (answer, change) = busy_control(&request);
                    respond(&id, answer);
                    if change.is_some() {
                        return change;
                    }
                }
            }
        }
    }

    async fn apply(&mut self, agent: &mut Agent, op: Op) -> Flow {
        match op {
            Op::Control { id, request } => {
                let (answer, change) = control(
                    agent,
                    self.run,
                    self.crew,
                    self.callbacks,
                    &request,
                    &mut self.initialized,
                );
                if let Some(change) = change {
                    apply_change(agent, self.run, self.crew, change);
                }
                respond(&id, answer);
                Flow::Continue
            }
            Op::Command(text) => {
                let images = self.images.pop_front().unwrap_or_default();
                self.prompt(agent, Prompt::new(text, images)).await
            }
            change => {
                apply_change(agent, self.run, self.crew, change);
                Flow::Continue
            }
        }
    }

    async fn finished(&mut self, agent: &mut Agent, result: Result<Progress, Failure>) -> Flow {
        if let Some(command) = self.command.take() {
            command.end(agent);
        }
        let outcome = result.map_err(RunFailure::from);
        let outcome = over_budget(agent, self.crew, self.args.contract.max_budget_usd, outcome);
        let (stop_reason, ttft) = {
            let mut stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
            (
                stream.last_stop_reason.take(),
                stream.take_ttft(self.started),
            )
        };
        let report = run_result(
            agent,
            self.run,
            self.crew,
            outcome,
            self.started,
            stop_reason,
            ttft,
        )
        .await;
        self.last_failed = report.subtype.is_error();
        self.events.push(report.to_json());
        Flow::Continue
    }
}

impl Sdk<'_> {
    /// A user message: its own `result` even when it cannot start.
    async fn prompt(&mut self, agent: &mut Agent, prompt: Prompt) -> Flow {
        if !self.initialized {
            // A client that skipped `initialize` still gets the session's description first.
            self.events.push(init_event(agent, self.run, self.crew));
            self.initialized = true;
        }
        if self.args.sdk.replay_user_messages {
            self.events.push(replayed(&self.run.session_id, &prompt));
        }
        self.started = Instant::now();
        let custom = self.crew.custom.clone();
        match crate::slash::begin(agent, prompt, &custom.commands, &self.crew.mcp, None).await {
            Ok((prompt, command)) => {
                self.command = Some(command);
                *self.watch.lock().unwrap_or_else(PoisonError::into_inner) = BudgetWatch::new(
                    self.args.contract.max_budget_usd,
                    spent_usd(agent, self.crew),
                    agent.stop_flag(),
                );
                Flow::Prompt(prompt)
            }
            Err(why) => {
                let report = run_result(
                    agent,
                    self.run,
                    self.crew,
                    Err(RunFailure::Team(why)),
                    self.started,
                    None,
                    None,
                )
                .await;
                self.last_failed = true;
                self.events.push(report.to_json());
                Flow::Continue
            }
        }
    }
}
