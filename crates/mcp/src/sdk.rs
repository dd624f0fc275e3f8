//! In-process servers of a controlling process (the Agent SDK's `create_sdk_mcp_server`,
//! `"type": "sdk"` entries): every JSON-RPC message troupe's client sends is handed to an
//! [`SdkChannel`] (the binary carries it as a `mcp_message` control request) and the server's
//! answer to a request comes back as the message the client reads. This crate knows nothing of
//! the control protocol; the channel is the binary's. The transport over it is
//! [`crate::sdk_transport`]'s (the client's).

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Carries one JSON-RPC message to a controlling process's server and returns its answer
/// (for a notification, whatever acknowledgement the process sends).
#[async_trait]
pub trait SdkChannel: Send + Sync {
    /// Sends `message` to server `server`.
    async fn message(&self, server: &str, message: Value) -> Result<Value, String>;
}

/// The channel to a controlling process's servers, for [`crate::McpOptions`].
#[derive(Clone)]
pub struct SdkBridge(pub Arc<dyn SdkChannel>);

impl std::fmt::Debug for SdkBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SdkBridge")
    }
}
