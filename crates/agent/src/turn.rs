//! The one loop: inject mail, call the model, run the tools it asks for, append one
//! tool_result per tool_use, and go again until a response carries no tool_use.

use crate::binding::Binder;
use crate::compact::{CompactReason, Compactor};
use crate::extension::{
    Approver, Extension, InboxSource, MailBatch, ToolGate, ToolSource, Watcher, WorkspaceSource,
};
use crate::lifecycle::{LifecycleHooks, SessionSource};
use crate::permissions::Policy;
use crate::transcript::{repair_tail, Boundary, Transcript, TranscriptError};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_model::{Model, ModelError, ModelRequest, StopReason, ToolSpec};
use troupe_protocol::session::Prompt;
use troupe_protocol::{ChatMessage, Role, Usage};
use troupe_settings::Settings;
use troupe_tools::{Registry, ToolContext};

mod admit;
mod batch;
mod beside;
mod calls;
mod compaction;
mod control;
mod error;
mod moments;
mod report;
mod session;
mod steer;
mod wire;

pub use batch::MAX_READS_AT_ONCE;
pub use calls::PermissionDenial;
pub use error::AgentError;
pub use report::{AgentEvent, TurnEnd, TurnOutcome};
pub use wire::wire_messages;

/// How many times a reply cut off by `max_tokens` is continued automatically.
const MAX_CONTINUATIONS: u32 = 3;
/// The nudge sent when a reply was cut off at the output limit.
const CONTINUE_PROMPT: &str =
    "Your previous reply was cut off at the output token limit. Continue exactly where it stopped, without repeating anything.";

/// Fixed settings of an agent.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Agent name (`lead`, a teammate's name).
    pub name: String,
    /// Model name sent to the provider.
    pub model: String,
    /// Output token limit per call.
    pub max_tokens: u32,
    /// Model calls allowed per turn (`--max-turns`), `None` for no limit.
    pub max_rounds: Option<u32>,
}

/// One agent: a model, a tool set, a conversation, and the extensions the loop consults.
/// Made by [`AgentBuilder`](crate::AgentBuilder).
pub struct Agent {
    config: AgentConfig,
    model: Arc<dyn Model>,
    /// The system prompt, its part shared with agents built alike kept once for the process.
    system: crate::prompt_parts::HeldPrompt,
    /// Where the system prompt's shared and stable parts end (for prompt caching).
    cache_marks: troupe_model::CacheMarks,
    tools: Registry,
    /// The tools offered at the last model call: the base tools plus what the tool sources had;
    /// that round's calls are looked up here.
    offered: Registry,
    /// The specs of `offered`, built once and shared (see `specs`).
    specs: crate::specs::SpecCache,
    ctx: ToolContext,
    policy: Policy,
    /// `policy.mode`, shared with what acts for the agent (its extensions' tools).
    live_mode: crate::LiveMode,
    approver: Arc<dyn Approver>,
    gates: Vec<Arc<dyn ToolGate>>,
    inboxes: Vec<Arc<dyn InboxSource>>,
    binder: Binder,
    lifecycle: Vec<Arc<dyn LifecycleHooks>>,
    /// How the conversation starts, until the session-start hooks have run for it.
    session: Option<SessionSource>,
    sources: Vec<Arc<dyn ToolSource>>,
    stop: Arc<AtomicBool>,
    settings: Arc<Settings>,
    extensions: Vec<Arc<dyn Extension>>,
    todo: crate::todo::TodoList,
    messages: Vec<ChatMessage>,
    delivered: HashSet<String>,
    transcript: Option<Transcript>,
    /// The last round's transcript sync, started and not yet waited for (see `beside`).
    round_sync: Option<crate::transcript::StartedSync>,
    usage: Usage,
    /// `usage` per model called (a `/model` switch starts a new entry).
    usage_by_model: troupe_protocol::UsageByModel,
    api_ms: u64,
    compactor: Compactor,
    watchers: Vec<Arc<dyn Watcher>>,
    /// The workspace the agent was built with (its tools may be bound elsewhere for a round).
    home: std::path::PathBuf,
    /// Calls refused by a rule or by whoever answers permission questions, in order.
    denials: std::sync::Mutex<Vec<PermissionDenial>>,
    /// Where running calls' output goes as it comes, when someone watches.
    progress: Option<troupe_tools::ProgressSink>,
    /// The instruction files in the system prompt, for the lifecycle hooks.
    instructions: Vec<crate::lifecycle::InstructionFile>,
    /// How long each call ran, by call id, until its after-hooks are told.
    ran_for: std::sync::Mutex<std::collections::HashMap<String, std::time::Duration>>,
}

/// What the builder hands over to make an agent.
pub(crate) struct Parts {
    pub(crate) config: AgentConfig,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) system: crate::prompt::SystemPrompt,
    pub(crate) tools: Registry,
    pub(crate) ctx: ToolContext,
    pub(crate) policy: Policy,
    pub(crate) live_mode: crate::LiveMode,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) gates: Vec<Arc<dyn ToolGate>>,
    pub(crate) inboxes: Vec<Arc<dyn InboxSource>>,
    pub(crate) workspace_sources: Vec<Arc<dyn WorkspaceSource>>,
    pub(crate) lifecycle: Vec<Arc<dyn LifecycleHooks>>,
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) settings: Arc<Settings>,
    pub(crate) extensions: Vec<Arc<dyn Extension>>,
    pub(crate) todo: crate::todo::TodoList,
    pub(crate) compactor: Compactor,
    pub(crate) watchers: Vec<Arc<dyn Watcher>>,
    pub(crate) home: std::path::PathBuf,
    pub(crate) instructions: Vec<crate::lifecycle::InstructionFile>,
}

impl Agent {
    /// An agent with an empty conversation, from the parts the builder assembled.
    pub(crate) fn from_parts(parts: Parts) -> Agent {
        Agent {
            config: parts.config,
            model: parts.model,
            system: crate::prompt_parts::HeldPrompt::new(&parts.system),
            cache_marks: parts.system.marks,
            offered: parts.tools.clone(),
            specs: crate::specs::SpecCache::default(),
            tools: parts.tools,
            binder: Binder::new(parts.workspace_sources, parts.ctx.clone()),
            ctx: parts.ctx,
            policy: parts.policy,
            live_mode: parts.live_mode,
            approver: parts.approver,
            gates: parts.gates,
            inboxes: parts.inboxes,
            lifecycle: parts.lifecycle,
            session: Some(SessionSource::Startup),
            sources: parts.sources,
            stop: parts.stop,
            settings: parts.settings,
            extensions: parts.extensions,
            todo: parts.todo,
            messages: Vec::new(),
            delivered: HashSet::new(),
            transcript: None,
            round_sync: None,
            usage: Usage::default(),
            usage_by_model: troupe_protocol::UsageByModel::default(),
            api_ms: 0,
            compactor: parts.compactor,
            watchers: parts.watchers,
            home: parts.home,
            denials: std::sync::Mutex::new(Vec::new()),
            progress: None,
            instructions: parts.instructions,
            ran_for: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Attaches a transcript and restores the conversation it holds (repairing a killed run).
    pub(crate) fn attach_transcript(
        &mut self,
        path: &std::path::Path,
        mirror: Option<Arc<dyn crate::TranscriptMirror>>,
    ) -> Result<usize, TranscriptError> {
        let loaded = Transcript::load(path)?;
        self.messages = loaded.messages;
        self.delivered = loaded.mail_ids;
        if !self.messages.is_empty() {
            self.session = Some(SessionSource::Resume);
        }
        let carried = loaded.compacted.map(|c| c.todos).unwrap_or_default();
        self.todo.restore_or(&self.messages, &carried);
        // Whole tool results go beside the transcript: `<transcript without .jsonl>/`.
        self.compactor.spill =
            crate::compact::SpillDir::new(Some(path.with_extension("")), &self.home);
        self.compactor.replaced();
        self.transcript = Some(Transcript::open(path)?.mirrored(mirror));
        self.repair()?;
        Ok(self.messages.len())
    }

    /// Closes tool calls left without results (after an interrupt or a kill) and persists that.
    pub fn repair(&mut self) -> Result<(), TranscriptError> {
        if let Some(fix) = repair_tail(&self.messages) {
            self.push(fix, &[])?;
            self.sync_transcript()?;
        }
        Ok(())
    }

    /// The agent's todo list as it stands (what `todo_write` last saved).
    pub fn todos(&self) -> Vec<crate::todo::TodoItem> {
        self.todo.items()
    }

    /// A flag that, once set, ends the turn after the current round's tool calls finish.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The tool registry: the tools the agent was built with (the base tools and the
    /// extensions'), without those tool sources add while it runs.
    pub fn tools(&self) -> &Registry {
        &self.tools
    }

    /// The tools offered at the last model call (before any: the built tools), tool sources'
    /// included.
    pub fn offered_tools(&self) -> &Registry {
        &self.offered
    }

    /// The system prompt.
    pub fn system(&self) -> Arc<str> {
        self.system.whole()
    }

    /// The agent's fixed settings.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The effective settings the agent was built from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Sends the output of every call from now on to `sink` as it comes (the REPL shows the
    /// last lines of a running command). Tools that stream nothing report nothing.
    pub fn watch_tool_output(&mut self, sink: troupe_tools::ProgressSink) {
        self.progress = Some(sink);
    }

    /// The permission policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The extensions registered on the builder, in registration order.
    pub fn extensions(&self) -> &[Arc<dyn Extension>] {
        &self.extensions
    }

    /// The directory the tools work in now: the workspace the agent was built with, or the one
    /// a [`WorkspaceSource`] bound them to for the latest round.
    pub fn tool_workspace(&self) -> &std::path::Path {
        self.ctx.workspace.root()
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    /// Forgets the conversation (`/clear`). The transcript keeps the history and gains a
    /// boundary, so a later `--continue` starts after it. The conversation is forgotten even
    /// when the boundary cannot be written; the error says the transcript lacks it.
    pub fn clear(&mut self) -> Result<(), TranscriptError> {
        self.messages.clear();
        self.compactor.replaced();
        self.session = Some(SessionSource::Clear);
        match self.transcript.as_mut() {
            Some(t) => t.append_boundary(Boundary::Clear),
            None => Ok(()),
        }
    }

    /// The agent's background commands (`bash` with `run_in_background`): listed by `/bashes`,
    /// waited for by a headless run, killed when the agent ends.
    pub fn background(&self) -> Option<&troupe_tools::background::Jobs> {
        self.ctx.background.as_ref()
    }

    /// Tokens used since the agent was created.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The same tokens per model called, so each call is priced at the model it used.
    pub fn usage_by_model(&self) -> &troupe_protocol::UsageByModel {
        &self.usage_by_model
    }

    /// Milliseconds spent waiting on the model.
    pub fn api_ms(&self) -> u64 {
        self.api_ms
    }

    /// Tool specs as the model saw them at the last model call.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        wire::tool_specs_of(&self.offered)
    }

    /// Adds a message to the conversation and writes it to the transcript, unsynced: the
    /// round's end syncs ([`Agent::sync_transcript`]).
    fn push(&mut self, message: ChatMessage, mail_ids: &[String]) -> Result<(), TranscriptError> {
        if let Some(t) = self.transcript.as_mut() {
            t.append_message(&message, mail_ids)?;
        }
        self.messages.push(message);
        Ok(())
    }

    /// Runs one turn: optional new user input, then rounds until the model stops calling tools.
    /// Whatever way the turn ends, its messages are synced to the transcript before it returns.
    pub async fn run_turn(
        &mut self,
        input: Option<Prompt>,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        let outcome = self.run_rounds(input, observe).await;
        self.follow_mode();
        if let Err(error) = &outcome {
            self.turn_failed(error).await;
        }
        let synced = self.sync_and_mirror().await;
        let outcome = outcome?;
        synced?;
        Ok(outcome)
    }

    async fn run_rounds(
        &mut self,
        input: Option<Prompt>,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<TurnOutcome, AgentError> {
        self.repair()?;
        if let Some(prompt) = input {
            // Claude Code's order: the session starts before its first prompt is submitted.
            self.start_session().await?;
            if let Some(refusal) = self.submit_prompt(prompt).await? {
                return Ok(TurnOutcome {
                    text: refusal,
                    model_calls: 0,
                    end: TurnEnd::Halted,
                    usage: Usage::default(),
                });
            }
        }
        let mut stop_hook_active = false;
        let mut outcome = TurnOutcome {
            text: String::new(),
            model_calls: 0,
            end: TurnEnd::Done,
            usage: Usage::default(),
        };
        let mut continuations = 0;
        loop {
            self.inject_mail(observe).await?;
            if self.messages.last().map(|m| m.role) != Some(Role::User) {
                if outcome.model_calls == 0 {
                    outcome.end = TurnEnd::Nothing;
                }
                return Ok(outcome);
            }
            if let Some(max) = self.config.max_rounds {
                if outcome.model_calls >= max {
                    outcome.end = TurnEnd::MaxTurns;
                    return Ok(outcome);
                }
            }
            self.compact_if_needed(observe).await?;
            self.start_session().await?;
            self.follow_workspace().await?;
            self.follow_mode();
            let reply = self.call_model_beside_sync(observe).await?;
            outcome.model_calls += 1;
            outcome.usage.add(&reply.usage);
            let message = ChatMessage {
                role: Role::Assistant,
                content: reply.content,
            };
            let has_tools = message.has_tool_use();
            let text = message.text();
            if continuations == 0 {
                outcome.text = text;
            } else {
                outcome.text.push_str(&text);
            }
            if !message.content.is_empty() {
                observe(AgentEvent::Reply {
                    stop_reason: &reply.stop_reason,
                    usage: &reply.usage,
                    model: &self.config.model,
                });
                observe(AgentEvent::Assistant(&message));
                self.push_reply(message.clone(), &reply.usage)?;
            }
            self.compactor
                .meter
                .record_reply(self.messages.len(), &reply.usage);
            if has_tools {
                continuations = 0;
                if let Some(reason) = self.run_tools(&message, observe).await? {
                    outcome.text = reason;
                    outcome.end = TurnEnd::Halted;
                    return Ok(outcome);
                }
                if self.stop.load(Ordering::SeqCst) {
                    outcome.end = TurnEnd::Stopped;
                    return Ok(outcome);
                }
                continue;
            }
            if reply.stop_reason == StopReason::MaxTokens && continuations < MAX_CONTINUATIONS {
                continuations += 1;
                self.push(ChatMessage::user_text(CONTINUE_PROMPT), &[])?;
                continue;
            }
            if self.stop.load(Ordering::SeqCst) {
                outcome.end = TurnEnd::Stopped;
            } else if let Some(feedback) =
                self.keep_going(&mut stop_hook_active, &outcome.text).await
            {
                self.push(ChatMessage::user_text(feedback), &[])?;
                continue;
            }
            return Ok(outcome);
        }
    }

    /// Moves unread mail into the conversation, source by source: persisted first,
    /// acknowledged after.
    async fn inject_mail(
        &mut self,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<(), AgentError> {
        for inbox in self.inboxes.clone() {
            self.inject_from(inbox.as_ref(), observe).await?;
        }
        Ok(())
    }

    async fn inject_from(
        &mut self,
        inbox: &dyn InboxSource,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<(), AgentError> {
        let batch: MailBatch = inbox.fetch().await?;
        if batch.ack_token.is_none() {
            return Ok(());
        }
        let fresh: Vec<_> = batch
            .items
            .iter()
            .filter(|item| !self.delivered.contains(&item.id))
            .collect();
        if !fresh.is_empty() {
            let ids: Vec<String> = fresh.iter().map(|i| i.id.clone()).collect();
            let mut text = String::from("<inbox>\n");
            for item in &fresh {
                text.push_str(&item.text);
                text.push('\n');
            }
            text.push_str("</inbox>");
            self.push(ChatMessage::user_text(text.clone()), &ids)?;
            // Durable before the mailbox forgets it.
            self.sync_and_mirror().await?;
            self.delivered.extend(ids);
            observe(AgentEvent::MailInjected {
                count: fresh.len(),
                text: &text,
            });
        }
        Ok(inbox.ack(&batch).await?)
    }

    /// Takes up a mode the agent's own tools switched to (enter_plan_mode, exit_plan_mode).
    fn follow_mode(&mut self) {
        self.policy.mode = self.live_mode.get();
    }

    /// Moves the tools to where the extensions bind them for this round, telling the model
    /// when the directory changes (persisted like any message).
    async fn follow_workspace(&mut self) -> Result<(), AgentError> {
        let Some(rebound) = self.binder.follow(&self.config.name).await else {
            return Ok(());
        };
        self.ctx = rebound.ctx;
        if let Some(note) = rebound.note {
            let text = format!("<workspace-change>\n{note}\n</workspace-change>");
            self.push(ChatMessage::user_text(text), &[])?;
        }
        Ok(())
    }

    /// Asks every tool source what it offers now; the base tools keep their names.
    async fn refresh_offered(&mut self) {
        if self.sources.is_empty() {
            return;
        }
        // The base tools first, then the sources' sorted by name (an MCP server's as
        // `mcp__<server>__<tool>`): the order, and so the cached prefix, does not depend on
        // which server answered first.
        let mut offered = self.tools.clone();
        let mut added = Vec::new();
        for source in &self.sources {
            for tool in source.tools().await {
                if offered.get(tool.name()).is_none() {
                    added.push(tool);
                }
            }
        }
        added.sort_by(|a, b| a.name().cmp(b.name()));
        for tool in added {
            if offered.get(tool.name()).is_none() {
                offered.register(tool);
            }
        }
        self.offered = offered;
    }

    /// Calls the model with the conversation; a prompt-too-long refusal compacts it and tries
    /// once more, a second one ends the turn with [`AgentError::ContextFull`].
    async fn call_model(
        &mut self,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<troupe_model::ModelResponse, AgentError> {
        self.refresh_offered().await;
        let mut compacted = false;
        loop {
            let request = ModelRequest {
                model: self.config.model.clone(),
                system: self.system.whole(),
                messages: wire_messages(&self.messages),
                tools: self
                    .specs
                    .get(&self.offered, || wire::tool_specs_of(&self.offered)),
                max_tokens: self.config.max_tokens,
                agent: self.config.name.clone(),
                cache: Some(self.cache_marks),
            };
            let error = match self
                .stream_counted(&request, compaction::Shown::Streamed, observe)
                .await
            {
                Ok(reply) => return Ok(reply),
                Err(e) if e.is_prompt_too_long() => e,
                Err(e) => return Err(e.into()),
            };
            let sizes = error.prompt_sizes().unwrap_or_default();
            if let Some(limit) = sizes.limit {
                self.compactor.learn_window(limit);
            }
            let full = |compacted: bool, agent: &Agent| AgentError::ContextFull {
                compacted,
                tokens: sizes
                    .tokens
                    .unwrap_or_else(|| agent.compactor.meter.used(&agent.messages)),
                window: agent.compactor.config.window,
                message: match &error {
                    ModelError::PromptTooLong { message } => message.clone(),
                    other => other.to_string(),
                },
            };
            if compacted {
                return Err(full(true, self));
            }
            if self
                .summarize(CompactReason::PromptTooLong, "", observe)
                .await?
                .is_none()
            {
                return Err(full(false, self));
            }
            compacted = true;
        }
    }
}
