//! The MCP methods troupe's client calls on a [`Session`], and the little of their answers it
//! reads: `initialize` (then `notifications/initialized`), `tools/list` and `prompts/list` page
//! by page, `tools/call` (its result passed on as JSON) and `prompts/get`.

use crate::rpc::{RpcError, Session};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The protocol version troupe asks for in `initialize`.
pub(crate) const PROTOCOL_VERSION: &str = "2026-07-28";

/// What the server said of itself in answer to `initialize`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerInfo {
    /// The version it speaks.
    #[serde(default)]
    pub(crate) protocol_version: String,
    /// What it offers; troupe reads `prompts`.
    #[serde(default)]
    pub(crate) capabilities: Map<String, Value>,
    /// Its name and version.
    #[serde(default)]
    pub(crate) server_info: Value,
}

impl ServerInfo {
    /// Whether it declares the prompts capability.
    pub(crate) fn has_prompts(&self) -> bool {
        self.capabilities
            .get("prompts")
            .is_some_and(|p| !p.is_null())
    }
}

/// One tool of a `tools/list` answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteTool {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) input_schema: Map<String, Value>,
    #[serde(default)]
    pub(crate) annotations: Option<ToolAnnotations>,
}

/// The hints of a tool troupe reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolAnnotations {
    #[serde(default)]
    pub(crate) read_only_hint: Option<bool>,
}

impl RemoteTool {
    /// Whether the server marks the tool as not modifying its environment (`readOnlyHint`,
    /// false when absent): its calls may then run side by side with the response's other
    /// read-only calls. Only scheduling takes the hint; permissions still treat every MCP call
    /// as a side effect.
    pub(crate) fn read_only(&self) -> bool {
        self.annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false)
    }
}

/// One prompt of a `prompts/list` answer.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RemotePrompt {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<Vec<RemotePromptArgument>>,
}

/// One declared argument of a prompt.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RemotePromptArgument {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) required: Option<bool>,
}

/// A `prompts/get` answer: its messages' content as given.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct GetPromptResult {
    #[serde(default)]
    pub(crate) messages: Vec<PromptMessage>,
}

/// One message of a prompt.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PromptMessage {
    #[serde(default)]
    pub(crate) content: Value,
}

/// Reads `value` as `T`.
fn parse<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(|e| RpcError::Invalid(e.to_string()))
}

impl Session {
    /// The `initialize` handshake, then `notifications/initialized`. The error says what
    /// failed and what the client was doing.
    pub(crate) async fn initialize(&self) -> Result<ServerInfo, String> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "troupe", "version": env!("CARGO_PKG_VERSION")},
        });
        let info = match self.request_uncancelled("initialize", Some(params)).await {
            Ok(result) => parse::<ServerInfo>(result)
                .map_err(|e| format!("the initialize result is not one: {e}"))?,
            Err(RpcError::Send(why)) => {
                return Err(format!("{why} (while trying to send initialize request)"))
            }
            Err(RpcError::Closed) => {
                return Err("the connection closed before the initialize response".into())
            }
            Err(RpcError::Server { code, message }) => {
                return Err(format!("JSON-RPC error: {code}: {message}"))
            }
            Err(e) => return Err(e.to_string()),
        };
        self.notify("notifications/initialized", None)
            .await
            .map_err(|e| match e {
                RpcError::Send(why) => {
                    format!("{why} (while trying to send initialized notification)")
                }
                other => other.to_string(),
            })?;
        Ok(info)
    }

    /// Every tool of the server, following `nextCursor`.
    pub(crate) async fn list_all_tools(&self) -> Result<Vec<RemoteTool>, RpcError> {
        self.list_all("tools/list", "tools").await
    }

    /// Every prompt of the server, following `nextCursor`.
    pub(crate) async fn list_all_prompts(&self) -> Result<Vec<RemotePrompt>, RpcError> {
        self.list_all("prompts/list", "prompts").await
    }

    /// The items under `key` of every page of `method`.
    async fn list_all<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, RpcError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            let mut page = self.request(method, params).await?;
            let listed = page.get_mut(key).map(Value::take).unwrap_or(Value::Null);
            if !listed.is_null() {
                items.extend(parse::<Vec<T>>(listed)?);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                _ => return Ok(items),
            }
        }
    }

    /// `tools/call` of `name` with `arguments`: the result as given.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let params = json!({"name": name, "arguments": arguments});
        self.request("tools/call", Some(params)).await
    }

    /// `prompts/get` of `name` with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, RpcError> {
        let params = json!({"name": name, "arguments": arguments});
        parse(self.request("prompts/get", Some(params)).await?)
    }
}
