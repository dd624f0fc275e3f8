//! What `prompt` and `mcp_tool` hooks need from outside the hooks crate: one model call, one
//! MCP tool call. The composition root implements them over its model client and MCP servers;
//! the hooks crate knows neither.

use async_trait::async_trait;
use serde_json::Value;

/// One model call for a `prompt` hook.
#[async_trait]
pub trait HookModel: Send + Sync {
    /// Asks `model` (`None`: the small, fast model) `prompt` under `system`, on behalf of
    /// `agent`; the reply's text, or why there is none.
    async fn complete(
        &self,
        agent: &str,
        model: Option<&str>,
        system: &str,
        prompt: &str,
    ) -> Result<String, String>;
}

/// One MCP tool call for an `mcp_tool` hook.
#[async_trait]
pub trait HookTools: Send + Sync {
    /// Calls tool `tool` of server `server` with `input`; its text result, or why it failed.
    async fn call(&self, server: &str, tool: &str, input: Value) -> Result<String, String>;
}
