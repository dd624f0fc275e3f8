//! The one agent loop: prompt assembly, model calls, permissions, tool dispatch (read-only calls
//! side by side) and transcripts. Every agent of a run — lead, teammate, subagent — is made by
//! [`Recipe::build`] from the run's one resolved configuration and its [`Role`], and runs the
//! loop with its own tools, identity and [`Extension`]s.
//!
//! Must not know: teams, mail transports, MCP, NATS, hooks' processes or the CLI's flags. What
//! those add reaches the loop only through the traits here ([`Extension`], tool sources, gates,
//! approvers, inboxes, lifecycle hooks).

pub mod background;
mod binding;
pub mod builder;
pub mod compact;
pub mod confine;
pub mod effective_policy;
pub mod extension;
mod interned;
pub mod lifecycle;
mod lifecycle_moments;
pub mod live_mode;
pub mod memory;
pub mod memory_excludes;
pub mod memory_snapshot;
pub mod permissions;
pub mod prompt;
mod prompt_parts;
pub mod recipe;
pub mod session;
pub mod session_tools;
mod specs;
pub mod todo;
pub mod tool_filter;
pub mod transcript;
pub mod transcript_mirror;
pub mod turn;

pub use builder::{AgentBuilder, BuildError, DEFAULT_IDENTITY, DEFAULT_MAX_TOKENS};
pub use compact::{CompactReason, Compaction, ContextReport};
pub use effective_policy::{effective_policy, policy_warnings, PermissionFlags, PolicyError};
pub use extension::{
    Approval, Approver, BindingError, Extension, ExtensionContext, InboxError, InboxFuture,
    InboxSource, MailBatch, MailItem, Question, RefuseApprover, Restatement, ToolGate, ToolSource,
    Watcher, WorkspaceBinding, WorkspaceSource,
};
pub use lifecycle::{
    BeforeTool, CallDecision, CompactTrigger, Compacted, Expansion, InstructionFile, Instructions,
    InstructionsReason, LifecycleHooks, SessionEndReason, SessionSource, TaskChange, TaskInfo,
    ToolCall, TurnFailure, Verdict,
};
pub use live_mode::LiveMode;
pub use recipe::{AgentKind, Place, Recipe, Role, SharedExtensions};
pub use tool_filter::ToolFilter;
pub use transcript_mirror::{MirrorError, TranscriptMirror};
pub use turn::{
    Agent, AgentConfig, AgentError, AgentEvent, PermissionDenial, TurnEnd, TurnOutcome,
    MAX_READS_AT_ONCE,
};

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    use super::tool_schemas;
    use troupe_tools::schema::Built;

    #[test]
    fn tool_schemas_are_current() {
        let all = [
            Built::new::<crate::compact::tool::CompactInput>("COMPACT", tool_schemas::COMPACT),
            Built::new::<crate::session_tools::AskInput>("ASK", tool_schemas::ASK),
            Built::new::<crate::session_tools::EnterInput>("ENTER", tool_schemas::ENTER),
            Built::new::<crate::session_tools::ExitInput>("EXIT", tool_schemas::EXIT),
            Built::new::<crate::todo::TodoWriteInput>("TODO_WRITE", tool_schemas::TODO_WRITE),
        ];
        assert_eq!(
            troupe_tools::schema::check(&all, env!("CARGO_MANIFEST_DIR"), "troupe-agent"),
            Ok(())
        );
    }
}
