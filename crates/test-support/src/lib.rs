//! In-process test harness (as codex-rs's `core_test_support`): build an agent through the one
//! [`AgentBuilder`] against the fake model server, submit input, and wait — bounded — for the
//! events it reports. Teams are built the same way, with the lead extension on the lead.
//!
//! Test-only code: failures panic with what was seen, so a test says why it failed.
//!
//! Must not be a dependency of anything but tests and benches.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use troupe_agent::{Agent, AgentBuilder, AgentEvent, TurnOutcome};
use troupe_model::{ModelConfig, Provider, RetryPolicy};
use troupe_protocol::ChatMessage;
use troupe_team::{LeadExtension, Team, TeamConfig, TeammateMode, LEAD};
use troupe_testkit::FakeServer;
use troupe_tools::Workspace;

/// How long [`TestAgent::wait_for`] waits for an event before failing the test.
pub const WAIT: Duration = Duration::from_secs(30);

/// The model name tests send.
pub const MODEL: &str = "test-model";

/// A model configuration pointing at the fake server's Anthropic endpoint, retrying fast.
pub fn model_config(server: &FakeServer) -> ModelConfig {
    ModelConfig {
        provider: Provider::Anthropic,
        model: MODEL.to_string(),
        base_url: server.url(),
        api_key: Some("test-key".to_string()),
        auth: troupe_model::Auth::ApiKey,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
        stream_idle_timeout: WAIT,
        prompt_cache: troupe_model::PromptCache::default(),
        agent_header: true,
        reasoning: troupe_model::Reasoning::default(),
        tool_choice: troupe_model::ToolChoice::default(),
        custom_headers: Vec::new(),
    }
}

/// A builder for an agent named `name` in `workspace`, talking to `server`, dated for stable
/// prompts. Add extensions, a policy or a transcript, then [`TestAgent::spawn`] what it builds.
pub fn builder(workspace: &Path, server: &FakeServer, name: &str) -> AgentBuilder {
    let guard = match Workspace::new(workspace) {
        Ok(guard) => guard,
        Err(e) => panic!("workspace {}: {e}", workspace.display()),
    };
    let model = model_config(server);
    AgentBuilder::new(name, Arc::new(guard), model.build(), model.model.clone()).date("2026-01-01")
}

/// A team on `workspace` whose teammates run in this process and talk to `server`.
pub async fn team(workspace: &Path, server: &FakeServer, name: &str) -> Team {
    team_with(workspace, server, name, Vec::new()).await
}

/// Like [`team`], every agent of the team also getting `extensions` (as `TeamConfig` carries
/// the workspace's hooks).
pub async fn team_with(
    workspace: &Path,
    server: &FakeServer,
    name: &str,
    extensions: Vec<Arc<dyn troupe_agent::Extension>>,
) -> Team {
    let config = TeamConfig {
        team: name.to_string(),
        workspace: workspace.to_path_buf(),
        troupe_dir: workspace.join(".troupe"),
        recipe: {
            let mut recipe =
                troupe_agent::Recipe::new(model_config(server), model_config(server).build());
            recipe.shared = Arc::new(move |_| extensions.clone());
            recipe
        },
        mode: TeammateMode::InProcess,
        exe: None,
        agents: Default::default(),
        mcp_servers: Vec::new(),
        process_options: serde_json::Value::Null,
    };
    let store = match troupe_store::file::open(&config.troupe_dir, &config.team) {
        Ok(store) => store,
        Err(e) => panic!("opening the store of team {name}: {e}"),
    };
    match Team::open(config, store, None).await {
        Ok(team) => team,
        Err(e) => panic!("opening team {name}: {e}"),
    }
}

/// The lead of `team`, built like the binary builds it: the lead extension registered once.
pub fn lead_builder(workspace: &Path, server: &FakeServer, team: &Team) -> AgentBuilder {
    builder(workspace, server, LEAD).extension(Arc::new(LeadExtension::new(team.clone())))
}

/// What a running agent reported, owned so it can cross to the test.
#[derive(Debug, Clone)]
pub enum Event {
    /// Streamed visible text.
    Text(String),
    /// A complete assistant message.
    Assistant(ChatMessage),
    /// A tool call is about to run.
    ToolStarted {
        /// Tool name.
        name: String,
        /// Its input.
        input: serde_json::Value,
    },
    /// One round's tool results.
    ToolResults(ChatMessage),
    /// Inbox mail was injected.
    MailInjected {
        /// Number of messages.
        count: usize,
        /// The injected text.
        text: String,
    },
    /// A model call is being retried.
    Retrying(String),
    /// A notice about how the model is called from now on.
    Notice(String),
    /// The conversation was compacted.
    Compacted(troupe_agent::Compaction),
    /// The turn ended (`Err` carries the error's text).
    TurnComplete(Result<TurnOutcome, String>),
}

impl Event {
    fn from_agent(event: &AgentEvent<'_>) -> Option<Event> {
        Some(match event {
            AgentEvent::TextDelta(t) => Event::Text(t.to_string()),
            AgentEvent::ThinkingDelta(_)
            | AgentEvent::Reply { .. }
            | AgentEvent::PermissionDenied(_)
            | AgentEvent::ToolFinished { .. } => return None,
            AgentEvent::Retrying { reason, .. } => Event::Retrying(reason.to_string()),
            AgentEvent::Notice(text) => Event::Notice(text.to_string()),
            AgentEvent::Assistant(m) => Event::Assistant((*m).clone()),
            AgentEvent::ToolStarted { name, input, .. } => Event::ToolStarted {
                name: name.to_string(),
                input: (*input).clone(),
            },
            AgentEvent::ToolResults(m) => Event::ToolResults((*m).clone()),
            AgentEvent::MailInjected { count, text } => Event::MailInjected {
                count: *count,
                text: text.to_string(),
            },
            AgentEvent::Compacted(c) => Event::Compacted((*c).clone()),
        })
    }
}

/// An agent running on its own task: submissions go in, events come out.
pub struct TestAgent {
    submissions: mpsc::UnboundedSender<Option<String>>,
    events: mpsc::UnboundedReceiver<Event>,
    seen: Vec<Event>,
    task: tokio::task::JoinHandle<Agent>,
}

impl TestAgent {
    /// Builds the agent and starts its task; must run inside a tokio runtime.
    pub fn spawn(builder: AgentBuilder) -> TestAgent {
        let agent = match builder.build() {
            Ok(agent) => agent,
            Err(e) => panic!("building the agent: {e}"),
        };
        TestAgent::start(agent)
    }

    /// Starts the task for an agent already built.
    pub fn start(mut agent: Agent) -> TestAgent {
        let (submissions, mut inbox) = mpsc::unbounded_channel::<Option<String>>();
        let (events_tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Some(input) = inbox.recv().await {
                let tx = events_tx.clone();
                let mut observe = move |event: AgentEvent<'_>| {
                    if let Some(e) = Event::from_agent(&event) {
                        let _ = tx.send(e);
                    }
                };
                let outcome = agent
                    .run_turn(input.map(Into::into), &mut observe)
                    .await
                    .map_err(|e| e.to_string());
                let _ = events_tx.send(Event::TurnComplete(outcome));
            }
            agent
        });
        TestAgent {
            submissions,
            events,
            seen: Vec::new(),
            task,
        }
    }

    /// Starts a turn with `input` (`None`: a turn on mail alone).
    pub fn submit(&self, input: Option<&str>) {
        if self.submissions.send(input.map(str::to_string)).is_err() {
            panic!("the agent's task has ended");
        }
    }

    /// Waits (at most [`WAIT`]) for the first event matching `want`; earlier events are kept in
    /// [`seen`](Self::seen). Fails the test with every event seen when none matches in time.
    pub async fn wait_for(&mut self, mut want: impl FnMut(&Event) -> bool) -> Event {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) => {
                    self.seen.push(event.clone());
                    if want(&event) {
                        return event;
                    }
                }
                Ok(None) => panic!("the agent's task ended; seen: {:#?}", self.seen),
                Err(_) => panic!("no matching event within {WAIT:?}; seen: {:#?}", self.seen),
            }
        }
    }

    /// Submits `input` and waits for the turn to complete; an error fails the test.
    pub async fn turn(&mut self, input: Option<&str>) -> TurnOutcome {
        self.submit(input);
        match self.wait_for(|e| matches!(e, Event::TurnComplete(_))).await {
            Event::TurnComplete(Ok(outcome)) => outcome,
            Event::TurnComplete(Err(e)) => panic!("the turn failed: {e}"),
            _ => unreachable!("wait_for returns a matching event"),
        }
    }

    /// Every event seen so far by [`wait_for`](Self::wait_for).
    pub fn seen(&self) -> &[Event] {
        &self.seen
    }

    /// Ends the task after the current turn and hands the agent back.
    pub async fn finish(self) -> Agent {
        drop(self.submissions);
        match self.task.await {
            Ok(agent) => agent,
            Err(e) => panic!("the agent's task failed: {e}"),
        }
    }
}

/// Waits (at most [`WAIT`]) until `ready` holds, re-checking whenever a member of `team`
/// changes status in this process.
pub async fn wait_until(team: &Team, what: &str, mut ready: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let changed = team.shared().changed.notified();
        if ready().await {
            return;
        }
        // A change between the check and the wait is not lost: `notified` was created first.
        // Bounded re-checks cover changes made by other processes, which do not notify.
        let step = tokio::time::Instant::now() + Duration::from_millis(200);
        if tokio::time::timeout_at(step.min(deadline), changed)
            .await
            .is_err()
            && tokio::time::Instant::now() >= deadline
        {
            panic!("{what}: not within {WAIT:?}");
        }
    }
}
