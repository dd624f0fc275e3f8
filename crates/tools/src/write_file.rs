//! The `write_file` tool: whole files written atomically beneath the workspace root's handle
//! (see [`Workspace::write_atomic`](crate::Workspace::write_atomic)).

use crate::{parse_input, schema_of, Effect, Parents, Previous, Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// Input of the `write_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileInput {
    /// File to write, relative to the workspace root.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Creates or overwrites whole files.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFileTool;

const DESCRIPTION: &str = "Writes a file in the workspace, creating it (and missing parent \
directories) or replacing its whole content. The write is atomic: readers see the old or the new \
file, never half of one. To change part of an existing file prefer edit_file.";

#[async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<WriteFileInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::WRITE_FILE)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Edit
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: WriteFileInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let path = match ctx.workspace.resolve_for_write(&input.path) {
            Ok(path) => path,
            Err(err) => return err.into(),
        };
        let shown = ctx.workspace.display(&path);
        let bytes = input.content.len();
        let workspace = Arc::clone(&ctx.workspace);
        let written = tokio::task::spawn_blocking(move || {
            workspace.write_atomic(&path, input.content.as_bytes(), Parents::Create)
        })
        .await;
        match written {
            Ok(Ok(Previous::Nothing)) => ToolOutput::ok(format!("Created {shown} ({bytes} bytes)")),
            Ok(Ok(Previous::File(old))) => ToolOutput::ok(format!(
                "Overwrote {shown} ({bytes} bytes; it had {old} bytes)"
            )),
            Ok(Err(err)) => ToolOutput::error(format!("Cannot write {shown}: {err}")),
            Err(err) => ToolOutput::error(format!("Writing {shown} failed: {err}")),
        }
    }
}
