//! Extension points the loop calls into: [`Extension`] — one registration on the
//! [`AgentBuilder`](crate::AgentBuilder) contributing tools, system-prompt sections, a mail
//! source, tool gates and where the tools work — and the pieces it hands over: where inbox mail
//! comes from, who answers permission questions, gates that may refuse a tool call, the directory
//! the next round's tools work in, tools that appear while the agent runs (a changing tool
//! source). The team crate implements these; the agent crate knows nothing of teams.

use crate::lifecycle::LifecycleHooks;
use async_trait::async_trait;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_tools::{DynTool, Effect, Workspace};

/// What an extension may know about the agent it is installed into.
#[derive(Debug, Clone, Copy)]
pub struct ExtensionContext<'a> {
    /// The agent's name (`lead`, a teammate's name).
    pub agent: &'a str,
    /// The workspace root.
    pub workspace: &'a Path,
    /// The agent's stop flag: set it and the turn ends after the current round's tool calls.
    pub stop: &'a Arc<AtomicBool>,
    /// Where the agent's conversation is persisted, if it is.
    pub transcript: Option<&'a Path>,
    /// The agent's permission mode as it is at any moment.
    pub mode: &'a crate::LiveMode,
    /// The agent's workspace, whose bash working directory (`cd` persists) is where the agent
    /// is at any moment; `None` where no agent's tools run (a task hook's check).
    pub dirs: Option<&'a troupe_tools::Workspace>,
}

/// Something that extends every agent it is registered on: the team (lead or teammate side),
/// and later hooks, MCP servers, skills, memory, compaction, background work and cron.
///
/// The builder asks each registered extension once, in registration order, while it builds the
/// agent: tools are added to the registry (a later tool of the same name replaces an earlier
/// one), prompt sections are appended to the system prompt, gates run before permissions on
/// every call, and every inbox is drained into the conversation before each model call.
pub trait Extension: Send + Sync {
    /// A short name for logs and errors (`team-lead`, `mcp`).
    fn name(&self) -> &str;

    /// Tools the agent gains.
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        Vec::new()
    }

    /// Sections appended to the system prompt, after the project memory, in the part every
    /// agent of the same tools and workspace shares (and the provider caches once for all of
    /// them): nothing here may name this agent or change during its session.
    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        Vec::new()
    }

    /// Sections about this agent in particular (its name, role, task, worktree), placed after
    /// the shared part, with the agent's identity; they must not change during its session.
    fn agent_prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        Vec::new()
    }

    /// Gates consulted before the permission policy on every tool call.
    fn gates(&self, _cx: &ExtensionContext<'_>) -> Vec<Arc<dyn ToolGate>> {
        Vec::new()
    }

    /// Mail injected into the conversation before every model call.
    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        None
    }

    /// Hooks the loop calls at the points of the agent's life (Claude Code's command hooks).
    fn lifecycle(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        None
    }
    /// Where the agent's tools work, asked before every model call (see [`WorkspaceSource`]).
    fn workspace_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn WorkspaceSource>> {
        None
    }

    /// Tools that come and go while the agent runs (servers connecting in the background,
    /// their tool lists changing), asked again before every model call.
    fn tool_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn ToolSource>> {
        None
    }

    /// Text that re-states who the agent is and what it is working on, put at the head of the
    /// conversation each time it is compacted: what the summary must not blur and the system
    /// prompt may no longer say truly (a teammate's task and worktree, the team's roster now).
    /// Asked at each compaction, so it may read current state (the loop awaits it); it must
    /// answer quickly.
    fn restate(&self, _cx: &ExtensionContext<'_>) -> Option<Restatement> {
        None
    }

    /// Who keeps track of the agent from outside (the team's roster and event log): told its
    /// running token total after every model reply, so it is seen live rather than at the end
    /// of a turn, and each compaction.
    fn watcher(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn Watcher>> {
        None
    }

    /// Whether this extension's tools stay when the agent is built with a
    /// [`ToolFilter`](crate::ToolFilter) (they are what the agent needs to take part at all, such
    /// as a teammate's mail and protocol tools). Default: no, they are filtered like any other.
    fn tools_always_kept(&self) -> bool {
        false
    }
}

/// Keeps track of an agent from outside it. Called on the agent's task: no method may block
/// (hand slow writes off).
pub trait Watcher: Send + Sync {
    /// After each model reply (the agent's own calls and its summaries): `agent` has used
    /// `usage` so far (its model now, the total, and the tokens per model called).
    fn usage(&self, _agent: &str, _usage: &troupe_protocol::AgentUsage) {}

    /// The agent's conversation was compacted.
    fn compacted(&self, _agent: &str, _compaction: &crate::compact::Compaction) {}
}

/// A directory the agent's tools are bound to instead of the workspace it was built with: bash
/// runs there (its cwd and writable root), every file tool resolves and guards paths inside it.
#[derive(Debug, Clone)]
pub struct WorkspaceBinding {
    /// The directory, opened as a workspace.
    pub workspace: Arc<Workspace>,
    /// Directories outside it that commands allowed to write may also write (a git worktree's
    /// metadata in the main repository), added to the sandbox's writable roots.
    pub writable_roots: Vec<PathBuf>,
    /// What the model is told when its tools move here.
    pub note: String,
}

/// Says where the agent's tools work for the next round. The loop asks before every model call;
/// when the answer changes it rebuilds the tools' context and tells the model (the binding's
/// note, or that its tools are back in the workspace it was built with).
#[async_trait]
pub trait WorkspaceSource: Send + Sync {
    /// The binding for the next round; `Ok(None)` for the workspace the agent was built with.
    /// An error leaves the current binding as it is (and is logged).
    async fn binding(&self) -> Result<Option<WorkspaceBinding>, BindingError>;
}

/// Why a [`WorkspaceSource`] could not say where the tools work.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// The store behind it failed.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// The directory it binds to cannot be used (gone, unreadable, not what it should be).
    #[error(transparent)]
    Unusable(Box<dyn std::error::Error + Send + Sync>),
}

/// A tool set that may change between model calls: the loop asks for it before each call, so a
/// tool that became available joins on the next round, and the calls of that round run against
/// the tools the model was shown.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The tools on offer now. Called before every model call, so it must answer quickly: it may
    /// finish an update already under way (bounded), never wait for something still starting.
    /// A tool named like a base tool does not replace it.
    async fn tools(&self) -> Vec<DynTool>;
}

/// One piece of mail ready to be injected into a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct MailItem {
    /// Unique message id, for de-duplication on re-delivery.
    pub id: String,
    /// How the model should see it.
    pub text: String,
}

/// A batch of mail fetched from an inbox, to be acknowledged once persisted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MailBatch {
    /// Messages in arrival order.
    pub items: Vec<MailItem>,
    /// Opaque position to acknowledge (a mailbox byte offset); `None` when nothing was read.
    pub ack_token: Option<u64>,
}

/// An extension's re-statement after a compaction (see [`Extension::restate`]), awaited by the
/// loop.
pub type Restatement = futures_util::future::BoxFuture<'static, String>;

/// What an inbox's operations return: a future the agent loop awaits on its worker. A source
/// backed by a store does its waiting there (a server's answer, the blocking pool), so no
/// worker thread is held; an in-memory source answers at once (`Box::pin(ready(…))`).
pub type InboxFuture<'a, T> = futures_util::future::BoxFuture<'a, Result<T, InboxError>>;

/// Where an agent's incoming mail comes from.
pub trait InboxSource: Send + Sync {
    /// Unconsumed mail, without consuming it.
    fn fetch(&self) -> InboxFuture<'_, MailBatch>;
    /// Marks a batch consumed; called only after it is in the persisted transcript.
    fn ack<'a>(&'a self, batch: &'a MailBatch) -> InboxFuture<'a, ()>;
}

/// Why an inbox could not be read or acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// The store behind it failed.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

/// The answer to a permission question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the call.
    Allow,
    /// Run the call with this input instead (the Agent SDK's `updatedInput`, in troupe's
    /// fields); it goes through the gates and the deny rules again.
    AllowWith(Value),
    /// Refuse it; the text becomes the error tool_result.
    Deny(String),
}

/// A permission question about one tool call.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    /// The agent making the call.
    pub agent: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Its input.
    pub input: &'a Value,
    /// Why it needs approval.
    pub reason: &'a str,
    /// How a person could allow such calls without being asked (flags, rules).
    pub how_to_allow: &'a str,
    /// The team request the question is recorded as, when it is a teammate's asked of the
    /// person (shown with it, so `troupe team approve <id>` can answer it too).
    pub request_id: Option<&'a str>,
}

/// Answers "may this call run?" when the permission rules say to ask.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides on one call.
    async fn approve(&self, question: Question<'_>) -> Approval;

    /// Whether a question reaches somebody (a person, the lead, the controlling process);
    /// `false` for an approver that refuses every question unasked, whose refusals are then
    /// reported as decided without asking.
    fn asks_someone(&self) -> bool {
        true
    }
}

/// An approver for runs without a person: refuses, saying how to allow the call.
#[derive(Debug, Default)]
pub struct RefuseApprover;

#[async_trait]
impl Approver for RefuseApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        Approval::Deny(question.how_to_allow.to_string())
    }

    fn asks_someone(&self) -> bool {
        false
    }
}

/// A gate in the tool layer (the plan gate): may refuse a call before permissions are asked.
/// Async, so a gate that asks the store awaits it: a gate that blocked a runtime thread for it
/// (`block_in_place`) took a blocking-pool thread per call, and a thousand teammates checking
/// at once could take the whole pool and leave none for the store calls they waited for.
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// `Some(message)` refuses the call with that message.
    async fn check(&self, tool: &str, effect: Effect, input: &Value) -> Option<String>;

    /// Whether the gate let the call pass only because its effect is read-only, so it must run
    /// in the read-only sandbox whatever the permission mode says (the plan gate before approval).
    async fn confines(&self, _tool: &str, _effect: Effect, _input: &Value) -> bool {
        false
    }
}
