//! The one agent loop (DESIGN.md §1): prompt assembly, model calls, permissions, tool dispatch
//! and transcripts. Every agent — lead, teammate — is made by [`AgentBuilder`] and runs it with
//! its own tools, identity and [`Extension`]s.

pub mod background;
mod binding;
pub mod builder;
pub mod compact;
pub mod confine;
pub mod effective_policy;
pub mod extension;
pub mod lifecycle;
pub mod memory;
pub mod permissions;
pub mod prompt;
pub mod session;
mod specs;
pub mod todo;
pub mod tool_filter;
pub mod transcript;
pub mod transcript_mirror;
pub mod turn;

pub use builder::{AgentBuilder, BuildError, DEFAULT_IDENTITY, DEFAULT_MAX_TOKENS};
pub use compact::{CompactReason, Compaction, ContextReport};
pub use effective_policy::{effective_policy, PermissionFlags, PolicyError};
pub use extension::{
    Approval, Approver, BindingError, Extension, ExtensionContext, InboxError, InboxSource,
    MailBatch, MailItem, Question, RefuseApprover, ToolGate, ToolSource, Watcher, WorkspaceBinding,
    WorkspaceSource,
};
pub use lifecycle::{
    BeforeTool, CallDecision, CompactTrigger, LifecycleHooks, SessionEndReason, SessionSource,
    TaskChange, TaskInfo, ToolCall, Verdict,
};
pub use tool_filter::ToolFilter;
pub use transcript_mirror::{MirrorError, TranscriptMirror};
pub use turn::{
    Agent, AgentConfig, AgentError, AgentEvent, PermissionDenial, TurnEnd, TurnOutcome,
    MAX_READS_AT_ONCE,
};
