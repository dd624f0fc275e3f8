//! The one session driver. A front end (the REPL, `-p`, the SDK's stream-json session, a
//! teammate) submits [`Op`]s and renders [`Event`]s; the driver runs the agent's turns,
//! interrupts them, queues what arrives meanwhile, and wakes the agent for what waits for it
//! (mail, a finished background command, a task on the board) through [`Wakes`]. No front end
//! owns a loop that drives the agent.
//!
//! Must not know: teams, MCP, NATS, a terminal or a wire format. Those reach it as a
//! [`Frontend`] and a [`Wakes`] the composition root builds.

mod observe;
mod settle;
mod wakes;

pub use observe::{observe_with, Observer};
pub use troupe_protocol::session::{Cause, Op, Prompt};
pub use wakes::{NoWakes, Readiness, Wake, Wakes};

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Duration;
use troupe_agent::{Agent, AgentError, AgentEvent, TurnEnd, TurnOutcome};

/// What the driver tells its front end, in order.
pub enum Event<'a> {
    /// A turn starts, and why.
    TurnStarted(Cause),
    /// What the agent did during the turn: text, tool calls, usage, notices.
    Agent(AgentEvent<'a>),
    /// Something to tell the person between turns (a request nobody has answered).
    Note(&'a str),
    /// Something went wrong between turns; the session goes on.
    Error(&'a str),
    /// The turn ended.
    TurnEnded(&'a Result<TurnOutcome, Failure>),
}

/// Why a turn (or the work a prompt started) failed.
#[derive(Debug)]
pub enum Failure {
    /// The agent's turn failed.
    Agent(AgentError),
    /// The front end interrupted it.
    Interrupted,
    /// What the agent waited on failed or took too long (the team, its store).
    Wakes(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Agent(e) => write!(f, "{e}"),
            Failure::Interrupted => f.write_str("interrupted"),
            Failure::Wakes(why) => f.write_str(why),
        }
    }
}

/// How the work a prompt started went, across its turn and the turns it woke for.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The last turn's final text (a turn that found nothing to do keeps the earlier one).
    pub text: String,
    /// Model calls across the turns.
    pub model_calls: u32,
    /// How the last turn that did something ended.
    pub end: TurnEnd,
}

impl From<TurnOutcome> for Progress {
    fn from(turn: TurnOutcome) -> Progress {
        Progress {
            text: turn.text,
            model_calls: turn.model_calls,
            end: turn.end,
        }
    }
}

/// What the front end wants after a command or a finished piece of work.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// Wait for the next operation (or wake).
    Continue,
    /// Run this prompt, as if the person had typed it.
    Prompt(Prompt),
    /// Run a turn on the conversation as it stands (after a failed call, on a new model).
    Retry,
    /// End the session.
    End,
}

/// A front end: where operations come from, and what it does between turns.
#[async_trait::async_trait]
pub trait Frontend: Send {
    /// The next operation. `turn` says what runs meanwhile: `None` while idle, the turn's
    /// cause while one runs. `None` back means the input closed: a running turn finishes,
    /// then the session ends. Must be cancel-safe: the driver drops it when a turn ends.
    async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op>;

    /// Applies an operation only the front end can ([`Op::Command`], model and control
    /// operations), between turns, with the agent at hand.
    async fn apply(&mut self, agent: &mut Agent, op: Op) -> Flow;

    /// Called before each turn (a mode chosen meanwhile is applied here, a status set).
    async fn before_turn(&mut self, _agent: &mut Agent, _cause: Cause) {}

    /// The work started by a prompt or a wake is done (with [`Policy::settle`], when the
    /// turns it woke for are done too): report it and say what comes next.
    async fn finished(&mut self, agent: &mut Agent, result: Result<Progress, Failure>) -> Flow;
}

/// How a front end wants its session driven.
#[derive(Debug, Clone)]
pub struct Policy {
    /// After a prompt, run the turns the wakes ask for until nothing keeps the session busy
    /// (failing after this long) before the prompt counts as finished: the shape of `-p`
    /// and the SDK's session. `None`: a prompt is finished when its turn ends, and wakes
    /// start turns of their own while idle (the REPL, a teammate).
    pub settle: Option<Duration>,
    /// How busy lists name the agent ("the lead").
    pub who: String,
    /// The agent's name ("lead", a teammate's name), as the [`Observer`] is told it.
    pub agent: String,
}

/// Drives one agent's session.
pub struct Driver<'a> {
    agent: &'a mut Agent,
    wakes: Box<dyn Wakes + 'a>,
    policy: Policy,
    /// Operations that arrived while a turn ran, in order.
    queued: VecDeque<Op>,
    /// The front end's input closed.
    closed: bool,
}

/// A sink for the driver's events.
pub type Sink<'s> = dyn FnMut(Event<'_>) + Send + 's;

impl<'a> Driver<'a> {
    /// A driver for `agent`, woken by `wakes`.
    pub fn new(agent: &'a mut Agent, wakes: Box<dyn Wakes + 'a>, policy: Policy) -> Driver<'a> {
        Driver {
            agent,
            wakes,
            policy,
            queued: VecDeque::new(),
            closed: false,
        }
    }

    /// The agent, between turns.
    pub fn agent(&mut self) -> &mut Agent {
        self.agent
    }

    /// Runs the session until the front end ends it or its input closes. `first` is the work
    /// to begin with ([`Flow::Continue`]: none, wait for an operation).
    pub async fn run(&mut self, first: Flow, front: &mut dyn Frontend, sink: &mut Sink<'_>) {
        if self.follow(first, front, sink).await {
            return;
        }
        loop {
            let op = match self.queued.pop_front() {
                Some(op) => op,
                None if self.closed => return,
                None => match self.idle(front, sink).await {
                    Some(op) => op,
                    None => return,
                },
            };
            let flow = match op {
                Op::Prompt(prompt) => self.work(Some(prompt), Cause::Prompt, front, sink).await,
                Op::Shutdown => return,
                // Nothing runs: there is nothing to interrupt.
                Op::Interrupt => Flow::Continue,
                Op::SetMode(mode) => {
                    self.set_mode(&mode, sink);
                    Flow::Continue
                }
                op => front.apply(self.agent, op).await,
            };
            if self.follow(flow, front, sink).await {
                return;
            }
        }
    }

    /// Carries out what a front end asked for; `true` when the session ends.
    async fn follow(
        &mut self,
        mut flow: Flow,
        front: &mut dyn Frontend,
        sink: &mut Sink<'_>,
    ) -> bool {
        loop {
            flow = match flow {
                Flow::Continue => return false,
                Flow::End => return true,
                Flow::Prompt(prompt) => self.work(Some(prompt), Cause::Prompt, front, sink).await,
                Flow::Retry => self.work(None, Cause::Follow, front, sink).await,
            };
        }
    }

    /// Waits while idle for an operation, running the turns wakes ask for meanwhile (unless
    /// the policy settles after prompts, where wakes matter only then). `None`: input closed.
    async fn idle(&mut self, front: &mut dyn Frontend, sink: &mut Sink<'_>) -> Option<Op> {
        loop {
            if self.policy.settle.is_none() {
                match self.readiness().await {
                    Ok(Readiness::Ready(Wake::Stop)) => return Some(Op::Shutdown),
                    Ok(Readiness::Ready(wake)) => {
                        let (input, cause) = wake.into_turn();
                        let flow = self.work(input, cause, front, sink).await;
                        if self.follow(flow, front, sink).await {
                            return Some(Op::Shutdown);
                        }
                        if let Some(op) = self.queued.pop_front() {
                            return Some(op);
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(why) => sink(Event::Error(&why)),
                }
            }
            let wakes = self.policy.settle.is_none();
            let jobs = self.agent.background().cloned();
            tokio::select! {
                op = front.next_op(None) => return op,
                () = self.wakes.changed(Duration::from_secs(3600)), if wakes => {}
                () = wakes::job_notification(jobs.as_ref()), if wakes => {}
            }
            for note in self.wakes.notes().await {
                sink(Event::Note(&note));
            }
        }
    }

    /// Runs a piece of work (a prompt or a wake's turn, and with [`Policy::settle`] the
    /// turns it wakes for) and lets the front end report it.
    async fn work(
        &mut self,
        input: Option<Prompt>,
        cause: Cause,
        front: &mut dyn Frontend,
        sink: &mut Sink<'_>,
    ) -> Flow {
        let turn = self.turn(input, cause, front, sink).await;
        let result = match (self.policy.settle, turn) {
            (Some(limit), Ok(turn)) => self.settle(turn.into(), limit, front, sink).await,
            (_, turn) => turn.map(Progress::from),
        };
        front.finished(self.agent, result).await
    }

    /// One turn, with the front end's operations taken meanwhile: an interrupt drops the
    /// turn (the conversation is repaired), a shutdown ends it at its next round boundary,
    /// anything else waits for the turn to end.
    async fn turn(
        &mut self,
        input: Option<Prompt>,
        cause: Cause,
        front: &mut dyn Frontend,
        sink: &mut Sink<'_>,
    ) -> Result<TurnOutcome, Failure> {
        front.before_turn(self.agent, cause).await;
        let watcher = observe::observer();
        let name = self.policy.agent.as_str();
        let mut sink = |event: Event<'_>| {
            if let Some(w) = watcher {
                w.event(name, &event);
            }
            sink(event)
        };
        if let Some(w) = watcher {
            w.turn_started(name, cause, input.as_ref().map(|p| p.text.as_str()));
        }
        sink(Event::TurnStarted(cause));
        let stop = self.agent.stop_flag();
        let result = {
            let mut observe = |event: AgentEvent<'_>| sink(Event::Agent(event));
            // Boxed: a session waiting between turns (a thousand idle teammates) then holds
            // no room for a turn's state.
            let mut turn = Box::pin(self.agent.run_turn(input, &mut observe));
            loop {
                tokio::select! {
                    r = &mut turn => break r.map_err(Failure::Agent),
                    op = front.next_op(Some(cause)), if !self.closed => match op {
                        None => self.closed = true,
                        Some(Op::Interrupt) => break Err(Failure::Interrupted),
                        Some(Op::Shutdown) => {
                            // The calls in flight finish first.
                            stop.store(true, Ordering::SeqCst);
                            self.closed = true;
                        }
                        Some(op) => self.queued.push_back(op),
                    },
                }
            }
        };
        if matches!(result, Err(Failure::Interrupted)) {
            if let Err(e) = self.agent.repair() {
                sink(Event::Error(&format!("after the interrupt: {e}")));
            }
        }
        sink(Event::TurnEnded(&result));
        result
    }

    fn set_mode(&mut self, mode: &str, sink: &mut Sink<'_>) {
        match mode.parse() {
            Ok(mode) => self.agent.set_permission_mode(mode),
            Err(e) => sink(Event::Error(&e.to_string())),
        }
    }
}
