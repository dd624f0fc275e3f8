//! Provider-neutral streaming model clients: the [`Model`] trait, the request and event types,
//! and clients for the Anthropic Messages API and OpenAI-compatible Chat Completions.
//!
//! Must not know: tools' implementations, agents, teams or permissions. It speaks the providers'
//! wire formats and retries transient failures with troupe's one `RetryPolicy`.

pub mod alias;
pub mod anthropic;
mod anthropic_body;
mod body;
pub mod cache;
pub mod endpoint;
pub mod error;
pub mod estimate;
mod http;
mod input_schema;
mod kind;
pub mod limit;
pub mod openai;
mod prefix_gate;
pub mod provider;
mod provider_env;
pub mod reasoning;
pub mod retry;
pub mod served;
/// Schema clean-up for providers: troupe's one (`troupe_protocol::schema`).
pub use troupe_protocol::schema;
pub mod sse;
pub mod tool_choice;
pub mod window;

pub use anthropic::AnthropicClient;
pub use cache::{CacheMarks, CacheTtl, PromptCache};
pub use endpoint::Configure;
pub use error::{ModelError, PromptSizes};
pub use input_schema::InputSchema;
pub use limit::{Limited, DEFAULT_MAX_CONCURRENT_CALLS};
pub use openai::OpenAiClient;
pub use provider::{Auth, ConfigError, ModelConfig, Provider, CUSTOM_HEADERS_VAR};
pub use provider_env::ambiguity_note;
pub use reasoning::{Effort, Reasoning, Thinking};
pub use retry::RetryPolicy;
pub use tool_choice::ToolChoice;
pub use window::{known_context_window, DEFAULT_CONTEXT_WINDOW};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use troupe_protocol::{ChatMessage, ContentBlock, Usage};

/// How long a model stream may go without a content event before the attempt is abandoned
/// and retried (pings and SSE comments do not count). Claude Code and Codex use deadlines of
/// this order; `TROUPE_STREAM_IDLE_TIMEOUT_MS` changes it.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// HTTP header naming the agent that makes a call; lets a test server route scripts per agent.
/// Sent only when [`AGENT_HEADER_VAR`] asks for it: a real provider never learns agent names.
pub const AGENT_HEADER: &str = "x-troupe-agent";

/// Set to `1` (the test kit does) to send [`AGENT_HEADER`] on every call.
pub const AGENT_HEADER_VAR: &str = "TROUPE_AGENT_HEADER";

/// Key of the object a tool call's input becomes when the model sent text that is not a JSON
/// object; the value is that raw text, so the tool layer can tell the model its input was
/// malformed instead of reporting a misleading missing field.
pub const INVALID_TOOL_INPUT_KEY: &str = "_invalid_json";

/// Parses the accumulated JSON text of a tool call's input: empty text is `{}`, a JSON object
/// is kept, anything else becomes `{INVALID_TOOL_INPUT_KEY: raw}` (still an object, so the
/// conversation stays valid when it is sent back).
pub fn parse_tool_input(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => value,
        _ => serde_json::json!({ INVALID_TOOL_INPUT_KEY: raw }),
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: InputSchema,
}

/// Everything one model call needs.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// System prompt.
    pub system: std::sync::Arc<str>,
    /// The conversation so far; never empty, starts with a user message.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call: shared, not copied, by every call of every agent that offers
    /// the same tools.
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// Upper bound on generated tokens for this call.
    pub max_tokens: u32,
    /// Name of the calling agent (sent as [`AGENT_HEADER`]).
    pub agent: String,
    /// What of the system prompt stays put, for prompt caching; `None`: a one-off request
    /// not worth caching (a summary, a probe).
    pub cache: Option<CacheMarks>,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The output hit `max_tokens`.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider refused to continue (safety).
    Refusal,
    /// Anything else the provider reported.
    Other(String),
}

impl StopReason {
    /// The reason as the Anthropic wire spells it (`end_turn`, `tool_use`, …).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::Other(other) => other,
        }
    }
}

/// Incremental events while a response streams, for live display.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of visible text.
    TextDelta(String),
    /// A piece of thinking text.
    ThinkingDelta(String),
    /// The model started a tool call.
    ToolUseStart {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// The call failed transiently and will be retried after `wait_ms`.
    Retrying {
        /// Attempt number that failed (1-based).
        attempt: u32,
        /// Milliseconds until the next attempt.
        wait_ms: u64,
        /// Human-readable reason (status, error).
        reason: String,
    },
    /// Something the person should know once about how calls are made from now on (the
    /// client fell back to non-streaming requests for a server that cannot stream tool calls).
    Notice(String),
}

/// A complete model response.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// Content blocks in order (thinking, text, tool_use).
    pub content: Vec<ContentBlock>,
    /// Why generation stopped.
    pub stop_reason: StopReason,
    /// Tokens used by this call.
    pub usage: Usage,
}

/// A streaming chat model. Implementations retry transient failures themselves.
#[async_trait]
pub trait Model: Send + Sync {
    /// Provider name, for display (`anthropic`, `openai`).
    fn provider(&self) -> &str;
    /// Streams one response, calling `on_event` as pieces arrive, and returns the whole of it.
    async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError>;

    /// Opens a connection to the provider ahead of the first request, so that the request
    /// finds one ready (its TCP and TLS handshakes done); nothing when there is no
    /// connection to open. Its failure is nobody's concern: the request reports its own.
    async fn preconnect(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_input_text_becomes_an_object() {
        assert_eq!(parse_tool_input(""), json!({}));
        assert_eq!(parse_tool_input("  "), json!({}));
        assert_eq!(parse_tool_input(r#"{"a": [1]}"#), json!({"a": [1]}));
        assert_eq!(
            parse_tool_input(r#"{"a": "#),
            json!({INVALID_TOOL_INPUT_KEY: r#"{"a": "#})
        );
        // Valid JSON that is not an object is not a valid tool input either.
        assert_eq!(
            parse_tool_input("[1, 2]"),
            json!({INVALID_TOOL_INPUT_KEY: "[1, 2]"})
        );
    }
}
