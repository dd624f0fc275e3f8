//! In-process servers of a controlling process (the Agent SDK's `create_sdk_mcp_server`,
//! `"type": "sdk"` entries): every JSON-RPC message troupe's client sends is handed to an
//! [`SdkChannel`] (the binary carries it as a `mcp_message` control request) and the server's
//! answer to a request comes back as the message the client reads. This crate knows nothing of
//! the control protocol; the channel is the binary's.

use async_trait::async_trait;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

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

/// Why a message could not be carried.
#[derive(Debug, thiserror::Error)]
#[error("SDK MCP server `{server}`: {message}")]
pub struct SdkError {
    server: String,
    message: String,
}

/// rmcp's client transport over an [`SdkChannel`].
pub(crate) struct SdkTransport {
    server: String,
    channel: Arc<dyn SdkChannel>,
    answers: mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl SdkTransport {
    pub(crate) fn new(server: &str, bridge: &SdkBridge) -> SdkTransport {
        let (answers, incoming) = mpsc::unbounded_channel();
        SdkTransport {
            server: server.to_string(),
            channel: bridge.0.clone(),
            answers,
            incoming,
        }
    }
}

impl Transport<RoleClient> for SdkTransport {
    type Error = SdkError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (server, channel, answers) = (
            self.server.clone(),
            self.channel.clone(),
            self.answers.clone(),
        );
        async move {
            let fail = |message: String| SdkError {
                server: server.clone(),
                message,
            };
            let message = serde_json::to_value(&item)
                .map_err(|e| fail(format!("cannot encode the message: {e}")))?;
            let is_request = message.get("id").is_some() && message.get("method").is_some();
            let answer = channel.message(&server, message).await.map_err(&fail)?;
            // A notification's acknowledgement (no id) is not a message for the client.
            if !is_request || answer.get("id").is_none_or(Value::is_null) {
                return Ok(());
            }
            let parsed: RxJsonRpcMessage<RoleClient> = serde_json::from_value(answer)
                .map_err(|e| fail(format!("its answer is not a JSON-RPC response: {e}")))?;
            answers
                .send(parsed)
                .map_err(|_| fail("the session has ended".to_string()))
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.incoming.close();
        std::future::ready(Ok(()))
    }
}
