//! The `compact` tool (s20): the model asks for its own conversation to be compacted; the loop
//! does it before the next model call, with the focus the model gave.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// The tool's name.
pub const TOOL_NAME: &str = "compact";

/// A compaction asked for and not yet done, shared by the tool and the loop.
#[derive(Debug, Clone, Default)]
pub struct CompactRequest {
    focus: Arc<Mutex<Option<String>>>,
}

impl CompactRequest {
    /// Asks for a compaction before the next model call, with `focus` (may be empty).
    pub fn ask(&self, focus: String) {
        *self.focus.lock().unwrap_or_else(PoisonError::into_inner) = Some(focus);
    }

    /// The pending request's focus, taking it.
    pub fn take(&self) -> Option<String> {
        self.focus
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Input of `compact`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompactInput {
    /// What the summary should keep in particular (optional).
    #[serde(default)]
    pub focus: Option<String>,
}

/// The `compact` tool.
pub struct CompactTool {
    request: CompactRequest,
}

impl CompactTool {
    /// The tool, filing its requests in `request`.
    pub fn new(request: CompactRequest) -> CompactTool {
        CompactTool { request }
    }
}

#[async_trait]
impl Tool for CompactTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        "Compact your own conversation: before your next step the earlier part is replaced by a \
         summary (goal, decisions, files, open items, todo list) and the most recent steps stay. \
         Use it when finished work's details are no longer needed or the context is nearly full."
    }
    fn input_schema(&self) -> Value {
        schema_of::<CompactInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::COMPACT)
    }
    fn effect(&self, _input: &Value) -> Effect {
        // It changes nothing outside the agent's own context: allowed in every mode.
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: CompactInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        self.request.ask(input.focus.unwrap_or_default());
        ToolOutput::ok(
            "Compaction scheduled: before your next step the conversation up to here is replaced \
             by a summary, and the most recent steps stay. Carry on with the work.",
        )
    }
}
