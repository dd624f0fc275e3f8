//! What a turn reports: the events it streams while it works and the outcome it ends with.

use troupe_protocol::{ChatMessage, Usage};

/// What the loop reports while it works, for display and logs.
#[derive(Debug)]
pub enum AgentEvent<'a> {
    /// Streamed visible text.
    TextDelta(&'a str),
    /// Streamed thinking text.
    ThinkingDelta(&'a str),
    /// A model call failed transiently and will be retried.
    Retrying {
        /// Attempt that failed.
        attempt: u32,
        /// Milliseconds until the retry.
        wait_ms: u64,
        /// Why it failed.
        reason: &'a str,
    },
    /// Something the person should be told once about how the model is called from now on
    /// (a provider's fallback); the text says what and why.
    Notice(&'a str),
    /// A model reply arrived: how it stopped and what it cost; its message follows as
    /// [`AgentEvent::Assistant`] (when it has content).
    Reply {
        /// Why the model stopped.
        stop_reason: &'a troupe_model::StopReason,
        /// Tokens this call used.
        usage: &'a Usage,
        /// The model that answered.
        model: &'a str,
    },
    /// A complete assistant message.
    Assistant(&'a ChatMessage),
    /// A tool call is about to run.
    ToolStarted {
        /// Tool call id.
        id: &'a str,
        /// Tool name.
        name: &'a str,
        /// Its input.
        input: &'a serde_json::Value,
    },
    /// One tool call finished (each call as it ends, before the round's
    /// [`AgentEvent::ToolResults`]).
    ToolFinished {
        /// Tool call id.
        id: &'a str,
        /// Tool name.
        name: &'a str,
        /// What the call returned.
        content: &'a str,
        /// Whether it failed.
        is_error: bool,
    },
    /// A call was refused without anybody being asked (a deny rule, the mode, a run with
    /// nobody to ask), before its [`AgentEvent::ToolFinished`]; Claude Code's
    /// `system/permission_denied`.
    PermissionDenied(&'a crate::PermissionDenial),
    /// The user message carrying one round's tool results.
    ToolResults(&'a ChatMessage),
    /// Inbox mail was injected into the conversation.
    MailInjected {
        /// Number of messages.
        count: usize,
        /// The injected text.
        text: &'a str,
    },
    /// The conversation was compacted (summarized); tokens before and after.
    Compacted(&'a crate::compact::Compaction),
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered without a tool call.
    Done,
    /// The round limit was reached.
    MaxTurns,
    /// A stop was requested (approved shutdown) and the current round finished.
    Stopped,
    /// There was nothing to answer (no new input, no mail).
    Nothing,
    /// A hook stopped the turn (refused the prompt, or said `continue: false`); the text says
    /// why.
    Halted,
}

/// The result of one turn.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// Final text of the turn (all text of its last assistant replies).
    pub text: String,
    /// Model calls made.
    pub model_calls: u32,
    /// Why it ended.
    pub end: TurnEnd,
    /// Tokens used during this turn.
    pub usage: Usage,
}
