//! `connect_mcp`: the one MCP tool every build has (without the client it says why nothing
//! connects).

use crate::status::ServerStatus;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Weak;
use troupe_tools::{Effect, Tool, ToolContext, ToolOutput};

/// What `connect_mcp` asks of the manager (either build's): to connect a configured server.
#[async_trait]
pub(crate) trait Connects: Send + Sync {
    /// Connects (or reconnects) the server `name`; its status, or why not.
    async fn connect(&self, name: &str) -> Result<ServerStatus, String>;
}

/// `connect_mcp{name}` (s20): connects a configured server that is not connected, or starts
/// one that failed or stopped again.
pub struct ConnectTool {
    manager: Weak<dyn Connects>,
    description: String,
}

impl ConnectTool {
    pub(crate) fn new(manager: Weak<dyn Connects>, names: &[&str]) -> ConnectTool {
        ConnectTool {
            manager,
            description: format!(
                "Connect a configured MCP server that is not connected yet, or reconnect one that failed or stopped. \
                 Its tools (mcp__<name>__…) are offered from your next step. Configured servers: {}.",
                names.join(", ")
            ),
        }
    }
}

#[async_trait]
impl Tool for ConnectTool {
    fn name(&self) -> &str {
        "connect_mcp"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The server's name as configured."}},
            "required": ["name"],
        })
    }

    /// It only (re)connects a server the person configured.
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let Some(name) = input.get("name").and_then(Value::as_str) else {
            return ToolOutput::error("connect_mcp needs {\"name\": \"<server>\"}");
        };
        let Some(manager) = self.manager.upgrade() else {
            return ToolOutput::error("MCP is shut down");
        };
        match manager.connect(name).await {
            Ok(status) => {
                let tools = match status.tools.is_empty() {
                    true => "no tools".to_string(),
                    false => status.tools.join(", "),
                };
                ToolOutput::ok(format!(
                    "MCP server `{name}` is connected with {} tool(s): {tools}. They are offered from your next step.",
                    status.tools.len()
                ))
            }
            Err(message) => ToolOutput::error(message),
        }
    }
}
