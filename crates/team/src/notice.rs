//! What the team runtime tells the person watching (the REPL, stream-json) as it happens.

use std::sync::Arc;
use troupe_protocol::AgentStatus;

/// One thing worth showing.
#[derive(Debug, Clone)]
pub enum Notice {
    /// A member's status changed.
    Status {
        /// Member name.
        name: String,
        /// New status.
        status: AgentStatus,
        /// Why (error text for `failed`).
        detail: String,
    },
    /// A member called a tool.
    Tool {
        /// Member name.
        agent: String,
        /// Tool name.
        tool: String,
        /// One-line summary of the input.
        summary: String,
    },
    /// Mail was sent.
    Mail {
        /// Sender.
        from: String,
        /// Recipient.
        to: String,
        /// Mail type.
        kind: String,
        /// Content.
        content: String,
    },
}

/// Where notices go; `None` drops them.
pub type NoticeSink = Option<Arc<dyn Fn(Notice) + Send + Sync>>;
