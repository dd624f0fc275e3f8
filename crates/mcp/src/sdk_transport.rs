//! rmcp's client transport over an [`SdkChannel`] (part of the client: see [`crate::sdk`]).

use crate::sdk::{SdkBridge, SdkChannel};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

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
