//! The compaction pipeline, run before every model call, each step only when needed:
//!
//! 1. *output budget* ([`budget`]): a tool result larger than the budget is kept whole under
//!    the session's folder and shown by its head and tail;
//! 2. *micro-compaction* ([`micro`]): past [`MICRO_AT`] of the window, tool results older than
//!    the last [`KEEP_ROUNDS`] rounds become one-line stubs;
//! 3. *summary* ([`summary`]): past [`SUMMARY_AT`] of the window (or when asked), the model
//!    summarizes the work and the conversation becomes that summary plus the recent rounds.
//!
//! A prompt-too-long error from the provider is the fourth, reactive step (in the loop: a
//! summary and one retry). [`meter`] keeps the count the steps decide on. Everything here is a
//! pure function over the message list or cheap state; the loop (`turn/compaction.rs`) does
//! the model call and the transcript.

pub mod budget;
pub mod meter;
pub mod micro;
pub mod summary;
pub mod tool;

pub use budget::SpillDir;
pub use meter::ContextMeter;
pub use tool::{CompactRequest, CompactTool};

use crate::extension::{Extension, ExtensionContext};
use crate::lifecycle::CompactTrigger;
use serde::Serialize;
use std::sync::Arc;
use troupe_protocol::ChatMessage;
use troupe_tools::DynTool;

/// Fraction of the window past which the conversation is summarized.
pub const SUMMARY_AT: f64 = 0.80;
/// Fraction of the window past which old tool results become stubs.
pub const MICRO_AT: f64 = 0.50;
/// Rounds whose tool results micro-compaction leaves whole.
pub const KEEP_ROUNDS: usize = 3;
/// Fraction of the window the recent messages kept verbatim by a summary may take.
pub const KEEP_AT_SUMMARY: f64 = 0.25;
/// The most the summarizing call is shown, in tokens (and at most half the window).
pub const SUMMARY_INPUT_TOKENS: u64 = 50_000;
/// Output limit of the summarizing call.
pub const SUMMARY_MAX_TOKENS: u32 = 4_096;

/// Where the context window figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `--context-window` or the `contextWindow` setting.
    Configured,
    /// The table of well-known models.
    KnownModel,
    /// Neither: the default.
    Default,
    /// The provider stated it in a prompt-too-long error.
    Provider,
}

impl WindowSource {
    /// How `/context` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Configured => "configured",
            WindowSource::KnownModel => "known model",
            WindowSource::Default => "default; set --context-window or contextWindow",
            WindowSource::Provider => "stated by the provider",
        }
    }
}

/// The thresholds of one agent's pipeline, all derived from its window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactConfig {
    /// The model's context window, in tokens.
    pub window: u64,
    /// Where that figure came from.
    pub source: WindowSource,
    /// Tool results larger than this many bytes are budgeted.
    pub output_budget: usize,
}

impl CompactConfig {
    /// The configuration for a window of `window` tokens.
    pub fn new(window: u64, source: WindowSource) -> CompactConfig {
        CompactConfig {
            window,
            source,
            output_budget: budget::output_budget(window),
        }
    }

    /// The window for `model`: `configured` when given, else the well-known figure, else the
    /// default.
    pub fn for_model(model: &str, configured: Option<u64>) -> CompactConfig {
        match (configured, troupe_model::known_context_window(model)) {
            (Some(n), _) => CompactConfig::new(n, WindowSource::Configured),
            (None, Some(n)) => CompactConfig::new(n, WindowSource::KnownModel),
            (None, None) => {
                CompactConfig::new(troupe_model::DEFAULT_CONTEXT_WINDOW, WindowSource::Default)
            }
        }
    }

    /// Tokens past which the conversation is summarized.
    pub fn summary_at(&self) -> u64 {
        fraction(self.window, SUMMARY_AT)
    }

    /// Tokens past which old tool results become stubs.
    pub fn micro_at(&self) -> u64 {
        fraction(self.window, MICRO_AT)
    }

    /// Tokens the messages kept verbatim by a summary may take.
    pub fn keep_at_summary(&self) -> u64 {
        fraction(self.window, KEEP_AT_SUMMARY)
    }

    /// Bytes of conversation the summarizing call may be shown.
    pub fn summary_input_bytes(&self) -> usize {
        let tokens = SUMMARY_INPUT_TOKENS.min(self.window / 2);
        usize::try_from(tokens * meter::BYTES_PER_TOKEN).unwrap_or(usize::MAX)
    }
}

fn fraction(window: u64, f: f64) -> u64 {
    (window as f64 * f) as u64
}

/// Why a conversation was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// `/compact` or the `compact` tool.
    Requested,
    /// The context passed [`SUMMARY_AT`] of the window.
    Threshold,
    /// The provider refused the prompt as too long.
    PromptTooLong,
}

impl CompactReason {
    /// The lifecycle trigger it is (Claude Code's `manual` or `auto`).
    pub fn trigger(self) -> CompactTrigger {
        match self {
            CompactReason::Requested => CompactTrigger::Manual,
            CompactReason::Threshold | CompactReason::PromptTooLong => CompactTrigger::Auto,
        }
    }

    /// Its name in events and output.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactReason::Requested => "requested",
            CompactReason::Threshold => "threshold",
            CompactReason::PromptTooLong => "prompt_too_long",
        }
    }
}

/// One compaction, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compaction {
    /// Why it happened.
    pub reason: CompactReason,
    /// Tokens of the context before.
    pub tokens_before: u64,
    /// Tokens of the context after (estimated).
    pub tokens_after: u64,
    /// Messages summarized away.
    pub summarized: usize,
    /// Messages kept verbatim after the summary.
    pub kept: usize,
}

/// Where an agent's context stands, for `/context`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextReport {
    /// The window, in tokens.
    pub window: u64,
    /// Where the window figure came from.
    pub source: WindowSource,
    /// Tokens the next request would take.
    pub used: u64,
    /// Whether `used` rests on what the provider counted (else only on the estimate).
    pub measured: bool,
    /// The estimate of the system prompt and tool definitions.
    pub fixed: u64,
    /// Messages in the conversation.
    pub messages: usize,
    /// Tokens past which old tool results become stubs.
    pub micro_at: u64,
    /// Tokens past which the conversation is summarized.
    pub summary_at: u64,
    /// Tool results larger than this many bytes are kept aside.
    pub output_budget: usize,
    /// Compactions of this conversation since the agent started.
    pub compactions: u32,
    /// The latest of them.
    pub last: Option<Compaction>,
}

impl ContextReport {
    /// The report as a few lines of text.
    pub fn render(&self) -> String {
        let pct = |n: u64| n as f64 * 100.0 / self.window.max(1) as f64;
        let mut out = format!(
            "context: {} of {} tokens ({:.0}%, {}) · window {} ({})\n",
            self.used,
            self.window,
            pct(self.used),
            if self.measured {
                "counted by the provider + estimate"
            } else {
                "estimated"
            },
            self.window,
            self.source.as_str()
        );
        out.push_str(&format!(
            "  system prompt and tools ≈ {} tokens · {} messages\n",
            self.fixed, self.messages
        ));
        out.push_str(&format!(
            "  old tool results become stubs past {} tokens ({:.0}%), summary past {} ({:.0}%); results over {} bytes are kept aside\n",
            self.micro_at,
            pct(self.micro_at),
            self.summary_at,
            pct(self.summary_at),
            self.output_budget
        ));
        match &self.last {
            None => out.push_str("  not compacted yet (/compact [focus] does it now)\n"),
            Some(c) => out.push_str(&format!(
                "  compacted {} time(s); last: {}, {} → {} tokens, {} messages summarized, {} kept\n",
                self.compactions,
                c.reason.as_str(),
                c.tokens_before,
                c.tokens_after,
                c.summarized,
                c.kept
            )),
        }
        out
    }
}

/// One agent's pipeline state.
#[derive(Debug)]
pub struct Compactor {
    /// Thresholds.
    pub config: CompactConfig,
    /// The context count.
    pub meter: ContextMeter,
    /// Where whole tool results go.
    pub spill: SpillDir,
    /// A compaction the `compact` tool asked for.
    pub request: CompactRequest,
    /// Messages before this index have been through the output budget.
    budgeted: usize,
    /// Compactions so far.
    pub compactions: u32,
    /// The latest compaction.
    pub last: Option<Compaction>,
}

/// What the pipeline's cheap steps found before a model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Nothing more to do: call the model.
    Nothing,
    /// Summarize first, for this reason, with this focus.
    Summary(CompactReason, String),
}

impl Compactor {
    /// A pipeline with `config`, keeping whole results in `spill`.
    pub fn new(config: CompactConfig, spill: SpillDir, request: CompactRequest) -> Compactor {
        Compactor {
            config,
            meter: ContextMeter::default(),
            spill,
            request,
            budgeted: 0,
            compactions: 0,
            last: None,
        }
    }

    /// Runs the output budget and, when needed, micro-compaction over `messages`, and says
    /// whether a summary is due. Cheap when nothing needs compacting: the budget looks only at
    /// messages it has not seen, the count only at what came after the last reply.
    pub fn before_call(&mut self, messages: &mut [ChatMessage]) -> Due {
        let from = self.budgeted.min(messages.len());
        for (index, saved) in budget::apply(messages, from, self.config.output_budget, &self.spill)
        {
            self.meter.shrink(index, saved);
        }
        self.budgeted = messages.len();
        if let Some(focus) = self.request.take() {
            return Due::Summary(CompactReason::Requested, focus);
        }
        let mut used = self.meter.used(messages);
        if used > self.config.micro_at() {
            let before = micro::keep_from(messages, KEEP_ROUNDS);
            for (index, saved) in micro::apply(messages, before, &self.spill) {
                self.meter.shrink(index, saved);
            }
            used = self.meter.used(messages);
        }
        if used > self.config.summary_at() {
            Due::Summary(CompactReason::Threshold, String::new())
        } else {
            Due::Nothing
        }
    }

    /// The conversation was replaced (loaded, cleared, compacted): count and budget afresh.
    pub fn replaced(&mut self) {
        self.meter.reset();
        self.budgeted = 0;
    }

    /// The provider stated the window in a prompt-too-long error: a smaller figure than ours
    /// wins from now on.
    pub fn learn_window(&mut self, limit: u64) {
        if limit > 0 && limit < self.config.window {
            tracing::info!(
                window = limit,
                was = self.config.window,
                "the provider stated a smaller context window"
            );
            self.config = CompactConfig::new(limit, WindowSource::Provider);
        }
    }

    /// Where the context stands now.
    pub fn report(&self, messages: &[ChatMessage]) -> ContextReport {
        ContextReport {
            window: self.config.window,
            source: self.config.source,
            used: self.meter.used(messages),
            measured: self.meter.is_measured(),
            fixed: self.meter.fixed(),
            messages: messages.len(),
            micro_at: self.config.micro_at(),
            summary_at: self.config.summary_at(),
            output_budget: self.config.output_budget,
            compactions: self.compactions,
            last: self.last.clone(),
        }
    }
}

/// Gives an agent the `compact` tool; the builder installs it on every agent.
pub struct CompactExtension {
    request: CompactRequest,
}

impl CompactExtension {
    /// The extension filing the tool's requests in `request`.
    pub fn new(request: CompactRequest) -> CompactExtension {
        CompactExtension { request }
    }
}

impl Extension for CompactExtension {
    fn name(&self) -> &str {
        "compact"
    }
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![Arc::new(CompactTool::new(self.request.clone()))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_protocol::{ContentBlock, Role};

    #[test]
    fn windows_come_from_the_flag_the_table_or_the_default() {
        assert_eq!(
            CompactConfig::for_model("claude-sonnet-4-5", None).source,
            WindowSource::KnownModel
        );
        let local = CompactConfig::for_model("qwen", Some(32_000));
        assert_eq!(
            (local.window, local.source),
            (32_000, WindowSource::Configured)
        );
        assert_eq!(local.summary_at(), 25_600);
        assert_eq!(
            CompactConfig::for_model("qwen", None).source,
            WindowSource::Default
        );
    }

    #[test]
    fn a_small_conversation_needs_nothing_and_stays_as_it_is() {
        let mut c = Compactor::new(
            CompactConfig::new(100_000, WindowSource::Configured),
            SpillDir::default(),
            CompactRequest::default(),
        );
        let mut messages = vec![ChatMessage::user_text("hello")];
        let before = messages.clone();
        assert_eq!(c.before_call(&mut messages), Due::Nothing);
        assert_eq!(messages, before);
    }

    #[test]
    fn past_the_thresholds_old_results_are_stubbed_then_a_summary_is_due() {
        let mut c = Compactor::new(
            CompactConfig::new(10_000, WindowSource::Configured),
            SpillDir::default(),
            CompactRequest::default(),
        );
        let mut messages = vec![ChatMessage::user_text("go")];
        for i in 0..8 {
            let id = format!("t{i}");
            messages.push(ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "x"}),
                }],
            });
            messages.push(ChatMessage {
                role: Role::User,
                content: vec![ContentBlock::tool_result(id, "o".repeat(3_000), false)],
            });
        }
        // 8 × 750 tokens: past the micro threshold; stubs bring it well under the summary one.
        assert_eq!(c.before_call(&mut messages), Due::Nothing);
        let stubbed = messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolResult { content, .. } if content.starts_with(micro::STUB_PREFIX)))
            .count();
        assert_eq!(stubbed, 5);
        // Assistant text cannot be stubbed: past the summary threshold a summary is due.
        messages.push(ChatMessage::assistant_text("z".repeat(40_000)));
        assert_eq!(
            c.before_call(&mut messages),
            Due::Summary(CompactReason::Threshold, String::new())
        );
        c.request.ask("the tests".into());
        assert_eq!(
            c.before_call(&mut messages),
            Due::Summary(CompactReason::Requested, "the tests".into())
        );
    }
}
