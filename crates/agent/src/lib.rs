//! The one agent loop (DESIGN.md §1): prompt assembly, model calls, permissions, tool dispatch
//! and transcripts. Every agent — lead, teammate — runs it with its own tools and identity.

pub mod confine;
pub mod hooks;
pub mod permissions;
pub mod prompt;
pub mod session;
pub mod transcript;
pub mod turn;

pub use hooks::{
    Approval, Approver, InboxSource, MailBatch, MailItem, Question, RefuseApprover, ToolGate,
};
pub use turn::{Agent, AgentConfig, AgentError, AgentEvent, TurnEnd, TurnOutcome};
