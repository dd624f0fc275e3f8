//! Why a turn failed.

use super::compaction;
use crate::transcript::TranscriptError;
use troupe_model::ModelError;

/// Why a turn failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model call failed after retries, or could not be made.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The transcript could not be written; the turn stops rather than lose history.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// The inbox could not be read or acknowledged.
    #[error("inbox: {0}")]
    Inbox(#[from] crate::extension::InboxError),
    /// The provider refused the conversation as too long for the model's context window,
    /// and compacting it did not help (or there was nothing left to compact).
    #[error("{}", compaction::context_full(*.compacted, *.tokens, *.window, .message))]
    ContextFull {
        /// Whether the conversation was compacted before the refusal that ended the turn.
        compacted: bool,
        /// Tokens of the refused request (the provider's figure, else the estimate).
        tokens: u64,
        /// The context window in force.
        window: u64,
        /// The provider's message.
        message: String,
    },
}
