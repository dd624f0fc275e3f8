//! Everyone's mail tools: send_message and read_inbox.

use crate::shared::TeamShared;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use troupe_protocol::MailKind;
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// Input of `send_message`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendMessageInput {
    /// Recipient: a teammate's name, or "lead".
    pub to: String,
    /// The message.
    pub content: String,
}

/// `send_message{to, content}`: mail to one member; unknown names are an error listing the members.
pub struct SendMessage {
    shared: Arc<TeamShared>,
}

impl SendMessage {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> SendMessage {
        SendMessage { shared }
    }
}

#[async_trait]
impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }
    fn description(&self) -> &str {
        "Send a message to one teammate (by name) or to \"lead\". It is delivered to their inbox and wakes them if idle."
    }
    fn input_schema(&self) -> Value {
        schema_of::<SendMessageInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SEND_MESSAGE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: SendMessageInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.to == ctx.agent {
            return ToolOutput::error("you cannot send a message to yourself");
        }
        match self
            .shared
            .send(troupe_protocol::Envelope::new(
                MailKind::Message,
                &ctx.agent,
                &input.to,
                &input.content,
                troupe_agent::transcript::now_ms(),
            ))
            .await
        {
            Ok(env) => ToolOutput::ok(format!("Sent to {} (id {}).", input.to, env.id)),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `read_inbox` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInboxInput {}

/// `read_inbox`: shows unread mail. Mail is also delivered automatically before each step, so
/// this usually finds nothing new; it never consumes, so nothing can be lost through it.
pub struct ReadInbox {
    shared: Arc<TeamShared>,
}

impl ReadInbox {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ReadInbox {
        ReadInbox { shared }
    }
}

#[async_trait]
impl Tool for ReadInbox {
    fn name(&self) -> &str {
        "read_inbox"
    }
    fn description(&self) -> &str {
        "Check your inbox for unread messages. New mail is also delivered to you automatically, as <inbox> blocks, before each of your steps."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReadInboxInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::READ_INBOX)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, _input: Value, ctx: &ToolContext) -> ToolOutput {
        match self.shared.store.peek(&ctx.agent).await {
            Ok(batch) if batch.messages.is_empty() => ToolOutput::ok(
                "No unread messages. Everything sent to you so far is already in this conversation as <inbox> blocks.",
            ),
            Ok(batch) => {
                let text: Vec<String> = batch.messages.iter().map(crate::inbox::render_mail).collect();
                ToolOutput::ok(format!(
                    "{} unread (they will also be delivered to you before your next step):\n{}",
                    batch.messages.len(),
                    text.join("\n")
                ))
            }
            Err(e) => ToolOutput::error(format!("could not read the inbox: {e}")),
        }
    }
}
