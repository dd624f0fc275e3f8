//! What the [`LifecycleHooks`](crate::LifecycleHooks) are told at the moments beyond a call and
//! a prompt: a turn that failed, a compaction done, a slash command expanded, the instruction
//! files loaded.

use crate::lifecycle::CompactTrigger;
use std::path::PathBuf;

/// A turn that ended on a model or API error.
#[derive(Debug, Clone, Copy)]
pub struct TurnFailure<'a> {
    /// The kind, by Claude Code's names: `rate_limit`, `authentication_failed`,
    /// `billing_error`, `invalid_request`, `model_not_found`, `server_error`,
    /// `max_output_tokens` or `unknown`.
    pub kind: &'a str,
    /// A short code (the HTTP status, when there was one).
    pub code: &'a str,
    /// The error as the user sees it.
    pub message: &'a str,
}

/// A compaction that was done.
#[derive(Debug, Clone, Copy)]
pub struct Compacted<'a> {
    /// What started it.
    pub trigger: CompactTrigger,
    /// The summary the conversation now starts with.
    pub summary: &'a str,
    /// Estimated tokens of the conversation before it.
    pub tokens_before: u64,
    /// Estimated tokens after it.
    pub tokens_after: u64,
}

/// A slash command expanded into a prompt.
#[derive(Debug, Clone, Copy)]
pub struct Expansion<'a> {
    /// The command's name, without the slash.
    pub command: &'a str,
    /// The arguments typed after it.
    pub args: &'a str,
    /// Where it comes from (`project`, `user`, `plugin`, `skill`).
    pub source: &'a str,
    /// The prompt it expanded into.
    pub prompt: &'a str,
}

/// Why instruction files are (again) in the agent's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionsReason {
    /// The session started (or was resumed or cleared).
    SessionStart,
    /// The conversation was compacted; the files stay in the system prompt.
    Compact,
}

impl InstructionsReason {
    /// Claude Code's name for it (`session_start`, `compact`).
    pub fn as_str(self) -> &'static str {
        match self {
            InstructionsReason::SessionStart => "session_start",
            InstructionsReason::Compact => "compact",
        }
    }
}

/// The instruction (memory) files in the agent's system prompt.
#[derive(Debug, Clone, Copy)]
pub struct Instructions<'a> {
    /// Why they are told now.
    pub reason: InstructionsReason,
    /// The files, in prompt order.
    pub files: &'a [InstructionFile],
}

/// One instruction file in the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it is.
    pub path: PathBuf,
    /// Claude Code's memory type: `User` or `Project`.
    pub memory_type: &'static str,
    /// The file whose `@path` brought it in; `None` for a file found in its place.
    pub imported_by: Option<PathBuf>,
}
