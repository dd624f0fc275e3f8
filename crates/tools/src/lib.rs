//! The [`Tool`] trait, the [`Registry`], the workspace path guard and troupe's built-in tools.

pub mod bash;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod guard;
pub mod output;
pub mod read_file;
pub mod registry;
pub mod write_file;

pub use guard::Workspace;
pub use registry::Registry;

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// What a tool call does to the world; permissions and the plan gate decide on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (read_file, glob, grep, a read-only bash command, team queries).
    ReadOnly,
    /// Changes files in the workspace (write_file, edit_file).
    Edit,
    /// Runs arbitrary commands (bash that is not known to be read-only).
    Execute,
    /// Coordination with the team (messages, protocol answers); never gated by file permissions.
    Coordinate,
}

/// What a tool hands back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// True when the call failed; the model should act on the message.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: false }
    }

    /// A failed result, phrased so the model can act on it.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: true }
    }
}

/// Per-call context handed to every tool.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace every path must stay inside.
    pub workspace: Arc<Workspace>,
    /// Name of the agent making the call.
    pub agent: String,
}

/// A capability the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by (`bash`, `read_file`, …).
    fn name(&self) -> &str;
    /// What it does and when to use it, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the input object, generated from a Rust type.
    fn input_schema(&self) -> Value;
    /// What this particular call would do (bash inspects its command).
    fn effect(&self, input: &Value) -> Effect;
    /// Runs the call. Malformed input is an error output, never a panic.
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput;
}

/// A shared, dynamically typed tool.
pub type DynTool = Arc<dyn Tool>;
