//! The troupe tools MCP brings: each server tool as `mcp__<server>__<tool>` (`connect_mcp` is
//! [`crate::connect`]'s).

use crate::server::Server;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Weak;
use troupe_tools::{Effect, Tool, ToolContext, ToolOutput};

/// One tool of a server. Its calls are side effects (`Execute`): what a server does is its own
/// business, so only a permission rule (or the mode) lets them run without asking.
pub struct McpTool {
    server: Weak<Server>,
    name: String,
    remote: String,
    description: String,
    schema: Value,
    /// The server's `readOnlyHint`.
    read_only: bool,
}

impl McpTool {
    pub(crate) fn new(
        server: Weak<Server>,
        name: String,
        remote: String,
        description: String,
        schema: Value,
        read_only: bool,
    ) -> McpTool {
        McpTool {
            server,
            name,
            remote,
            description,
            schema,
            read_only,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    /// The server's schema as given; the model clients clean it per provider.
    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Execute
    }

    /// The server says the tool does not modify its environment (`readOnlyHint`): only the
    /// scheduling trusts that; permissions do not.
    fn reads_only(&self, _input: &Value) -> bool {
        self.read_only
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        match self.server.upgrade() {
            Some(server) => server.call(&self.name, &self.remote, input).await,
            None => ToolOutput::error(format!("{}: its MCP server is gone", self.name)),
        }
    }
}
