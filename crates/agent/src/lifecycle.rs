//! [`LifecycleHooks`]: the one seam through which something outside the loop — Claude Code's
//! command hooks — watches and steers an agent at the points of its life: the session's start
//! and end, each prompt, each tool call before and after, the end of a turn, a teammate going
//! idle, a task changing on the board. An [`Extension`](crate::Extension) provides it; the agent
//! crate knows nothing of what stands behind it.
//!
//! Every method has a default that says nothing, so an implementation answers only where it has
//! something to say, and an agent without lifecycle hooks pays nothing.

use async_trait::async_trait;
use serde_json::Value;
use std::time::Duration;
use troupe_tools::ToolOutput;

pub use crate::lifecycle_moments::{
    Compacted, Expansion, InstructionFile, Instructions, InstructionsReason, TurnFailure,
};

/// One tool call as the lifecycle sees it.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The tool_use id.
    pub id: &'a str,
    /// The tool's troupe name (`bash`, `read_file`, `mcp__server__tool`).
    pub name: &'a str,
    /// Its input.
    pub input: &'a Value,
}

/// What hooks answer at one point of an agent's life.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Refuse what was about to happen, with feedback for the model: a prompt is dropped, a
    /// task change refused; for the end of a turn or a teammate going idle, the agent keeps
    /// working on this feedback instead.
    pub block: Option<String>,
    /// Text the model should see (added to the prompt or the call's result).
    pub context: Vec<String>,
    /// End the turn now (`continue: false`), for this reason, shown to the user.
    pub halt: Option<String>,
}

impl Verdict {
    /// Combines the verdicts of several hooks: every block and context kept, the first halt.
    pub fn merge(mut self, other: Verdict) -> Verdict {
        self.block = match (self.block, other.block) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        };
        self.context.extend(other.context);
        self.halt = self.halt.or(other.halt);
        self
    }
}

/// A hook's say on whether a tool call runs, before the permission rules are asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallDecision {
    /// Run it without the question the permission mode would ask. Deny and ask rules, protected
    /// files and the sandbox still apply.
    Allow,
    /// Refuse it; the text goes to the model.
    Deny(String),
    /// Ask even where the rules would allow it; the text says why.
    Ask(String),
}

/// What hooks answer before a tool call runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeforeTool {
    /// Allow, deny or ask; `None` leaves it to the rules.
    pub decision: Option<CallDecision>,
    /// The input to run the call with instead; it is judged by the gates and rules afresh.
    pub input: Option<Value>,
    /// Text added to the call's result for the model.
    pub context: Vec<String>,
    /// End the turn after this round (`continue: false`), for this reason.
    pub halt: Option<String>,
}

impl BeforeTool {
    /// Combines the answers of several hooks: deny beats ask beats allow (as between permission
    /// rules), the later input wins, every context is kept, the first halt.
    pub fn merge(mut self, other: BeforeTool) -> BeforeTool {
        let rank = |d: &Option<CallDecision>| match d {
            None => 0,
            Some(CallDecision::Allow) => 1,
            Some(CallDecision::Ask(_)) => 2,
            Some(CallDecision::Deny(_)) => 3,
        };
        if rank(&other.decision) > rank(&self.decision) {
            self.decision = other.decision;
        }
        self.input = other.input.or(self.input);
        self.context.extend(other.context);
        self.halt = self.halt.or(other.halt);
        self
    }
}

/// Why a session (a conversation) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// A new conversation.
    Startup,
    /// A conversation restored from its transcript.
    Resume,
    /// The conversation was cleared (`/clear`).
    Clear,
    /// The conversation was compacted.
    Compact,
}

impl SessionSource {
    /// Claude Code's name for it (`startup`, `resume`, `clear`, `compact`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSource::Startup => "startup",
            SessionSource::Resume => "resume",
            SessionSource::Clear => "clear",
            SessionSource::Compact => "compact",
        }
    }
}

/// Why a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEndReason {
    /// `/clear` ended the conversation.
    Clear,
    /// The user left the REPL or the headless run finished.
    Exit,
    /// Anything else (a teammate ending).
    Other,
}

impl SessionEndReason {
    /// Claude Code's name for it (`clear`, `prompt_input_exit`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEndReason::Clear => "clear",
            SessionEndReason::Exit => "prompt_input_exit",
            SessionEndReason::Other => "other",
        }
    }
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// Asked for (`/compact`, the `compact` tool).
    Manual,
    /// The context grew past its threshold.
    Auto,
}

impl CompactTrigger {
    /// Claude Code's name for it (`manual`, `auto`).
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        }
    }
}

/// A change on the task board that hooks may refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskChange {
    /// A task is about to be created.
    Created,
    /// A task is about to be marked completed.
    Completed,
}

/// A task as the lifecycle sees it.
#[derive(Debug, Clone, Copy)]
pub struct TaskInfo<'a> {
    /// What is happening to it.
    pub change: TaskChange,
    /// Its id (empty before creation gives it one).
    pub id: &'a str,
    /// Its subject.
    pub subject: &'a str,
    /// Its description.
    pub description: &'a str,
    /// The team whose board it is on.
    pub team: &'a str,
}

/// Watches and steers one agent; provided by an [`Extension`](crate::Extension) for each agent
/// it is installed into. Methods run at the points their names say; none may take long, since
/// the agent waits for the answer.
#[async_trait]
pub trait LifecycleHooks: Send + Sync {
    /// Before the first model call of a conversation. `context` is shown to the model.
    async fn session_start(&self, _source: SessionSource) -> Verdict {
        Verdict::default()
    }

    /// A prompt arrived, before the model sees it. `block` drops it (the reason goes to the
    /// user); `context` is added after it.
    async fn prompt(&self, _prompt: &str) -> Verdict {
        Verdict::default()
    }

    /// A tool call is about to run, before the gates and the permission rules.
    async fn before_tool(&self, _call: ToolCall<'_>) -> BeforeTool {
        BeforeTool::default()
    }

    /// A tool call ran (or was refused). `block` and `context` are added to its result for the
    /// model.
    async fn after_tool(&self, _call: ToolCall<'_>, _output: &ToolOutput) -> Verdict {
        Verdict::default()
    }

    /// The model answered without a tool call and the turn would end. `block` keeps the turn
    /// going with that feedback; `active` says a stop hook already did so in this turn.
    async fn stop(&self, _active: bool, _last_text: &str) -> Verdict {
        Verdict::default()
    }

    /// The conversation is about to be compacted.
    async fn pre_compact(&self, _trigger: CompactTrigger, _instructions: &str) -> Verdict {
        Verdict::default()
    }

    /// The session ends; nothing can be refused any more.
    async fn session_end(&self, _reason: SessionEndReason) {}

    /// A teammate finished a work phase and would go idle. `block` keeps it working, with the
    /// feedback as its next prompt.
    async fn teammate_idle(&self, _team: &str) -> Verdict {
        Verdict::default()
    }

    /// A task is about to be created or completed. `block` refuses the change, with the
    /// feedback for the model.
    async fn task_change(&self, _task: TaskInfo<'_>) -> Verdict {
        Verdict::default()
    }

    /// [`Self::after_tool`] with how long the call ran (`None` when it never ran). The loop
    /// calls this one; by default it is `after_tool`.
    async fn after_tool_timed(
        &self,
        call: ToolCall<'_>,
        output: &ToolOutput,
        _ran_for: Option<Duration>,
    ) -> Verdict {
        self.after_tool(call, output).await
    }

    /// Every call of one model reply has its result, before the next model request. `block`
    /// and `context` are added for the model after the results; `halt` ends the turn.
    async fn after_round(&self, _calls: &[(ToolCall<'_>, &ToolOutput)]) -> Verdict {
        Verdict::default()
    }

    /// A permission question is about to be asked about `call` (`reason` says why). An answer
    /// here is given in place of whoever would be asked; `None` leaves the question to them.
    async fn permission_request(
        &self,
        _call: ToolCall<'_>,
        _reason: &str,
    ) -> Option<crate::extension::Approval> {
        None
    }

    /// The agent is about to wait for a person to answer a permission question about `call`.
    async fn awaiting_person(&self, _call: ToolCall<'_>, _reason: &str) {}

    /// The turn ended on a model or API error; nothing can be changed any more.
    async fn turn_failed(&self, _failure: TurnFailure<'_>) {}

    /// The conversation was compacted.
    async fn post_compact(&self, _compacted: Compacted<'_>) {}

    /// A slash command expanded into a prompt, before the prompt is submitted. `block` refuses
    /// it (the reason goes to the user); `context` is added after the prompt.
    async fn prompt_expanded(&self, _expansion: Expansion<'_>) -> Verdict {
        Verdict::default()
    }

    /// Instruction (memory) files are in the agent's context: at the session's start, or again
    /// after a compaction.
    async fn instructions_loaded(&self, _loaded: Instructions<'_>) {}
}
