//! The client's transport over an [`SdkChannel`] (part of the client: see [`crate::sdk`]):
//! each message is handed to the channel, and the answer to a request comes back as the
//! message the session reads.

use crate::rpc::{Link, Outgoing};
use crate::sdk::{SdkBridge, SdkChannel};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The sending half: the channel, and where its answers go.
struct SdkTransport {
    server: String,
    channel: Arc<dyn SdkChannel>,
    answers: mpsc::UnboundedSender<Value>,
}

/// The transport to `server` through `bridge`.
pub(crate) fn link(server: &str, bridge: &SdkBridge) -> Link {
    let (answers, incoming) = mpsc::unbounded_channel();
    let outgoing = Arc::new(SdkTransport {
        server: server.to_string(),
        channel: bridge.0.clone(),
        answers,
    });
    Link { outgoing, incoming }
}

#[async_trait]
impl Outgoing for SdkTransport {
    /// Carries `message` in a task of its own: a caller giving up (a timeout) does not cut the
    /// exchange with the controlling process off half-way.
    async fn send(&self, message: Value) -> Result<(), String> {
        let (server, channel, answers) = (
            self.server.clone(),
            self.channel.clone(),
            self.answers.clone(),
        );
        tokio::spawn(carry(server, channel, answers, message))
            .await
            .map_err(|e| format!("the message was lost: {e}"))?
    }
}

/// Hands `message` to `channel` and passes a request's answer on to `answers`.
async fn carry(
    server: String,
    channel: Arc<dyn SdkChannel>,
    answers: mpsc::UnboundedSender<Value>,
    message: Value,
) -> Result<(), String> {
    let server = &server;
    let fail = |message: String| format!("SDK MCP server `{server}`: {message}");
    let is_request = message.get("id").is_some() && message.get("method").is_some();
    let answer = channel.message(server, message).await.map_err(fail)?;
    // A notification's acknowledgement (no id) is not a message for the client.
    if !is_request || answer.get("id").is_none_or(Value::is_null) {
        return Ok(());
    }
    if !answer.is_object() || (answer.get("result").is_none() && answer.get("error").is_none()) {
        return Err(fail(format!(
            "its answer is not a JSON-RPC response: {answer}"
        )));
    }
    answers
        .send(answer)
        .map_err(|_| fail("the session has ended".to_string()))
}
