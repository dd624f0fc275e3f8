//! The Agent SDK's in-process MCP servers (`create_sdk_mcp_server`, `"type": "sdk"` entries of
//! `--mcp-config`): each JSON-RPC message troupe's MCP client sends goes out as a
//! `mcp_message` control request, and the `mcp_response` of the SDK's answer comes back to the
//! client.

use super::input::Pending;
use crate::render::stream_json;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use troupe_mcp::SdkChannel;

/// Sends `mcp_message` requests over stdout; their answers arrive through `pending`.
pub struct ControlMcp {
    pending: Arc<Pending>,
}

impl ControlMcp {
    /// A channel whose answers `pending` (filled by the stdin reader) delivers.
    pub fn new(pending: Arc<Pending>) -> ControlMcp {
        ControlMcp { pending }
    }
}

#[async_trait]
impl SdkChannel for ControlMcp {
    async fn message(&self, server: &str, message: Value) -> Result<Value, String> {
        let request_id = format!("troupe_{}", uuid::Uuid::new_v4().simple());
        let answer = self.pending.register(&request_id);
        stream_json::emit(&json!({
            "type": "control_request",
            "request_id": request_id,
            "request": {"subtype": "mcp_message", "server_name": server, "message": message},
        }));
        let response = match answer.await {
            Ok(answer) => answer?,
            Err(_) => return Err("the controlling process closed stdin before answering".into()),
        };
        response
            .get("mcp_response")
            .cloned()
            .ok_or_else(|| format!("the answer has no mcp_response: {response}"))
    }
}
