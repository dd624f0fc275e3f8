//! Token estimates at about 4 bytes a token, for what a provider did not count: compaction's
//! context accounting between replies, and the usage of a server that reports none
//! (llama.cpp's streams).

use crate::{ModelRequest, ModelResponse};
use serde_json::Value;
use troupe_protocol::{ChatMessage, ContentBlock, Usage};

/// Bytes per token in the estimate: the usual figure for English and code with the common BPE
/// tokenizers (it overcounts dense text a little, which errs on the safe side).
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens counted for one image: Anthropic charges about (width × height) / 750, which for a
/// screenshot scaled to its limit is about this.
const IMAGE_TOKENS: u64 = 1_600;

/// Framing each block costs on the wire (type tags, ids, quotes), in tokens.
const BLOCK_OVERHEAD: u64 = 4;

/// Framing each message costs on the wire (role, brackets), in tokens.
const MESSAGE_OVERHEAD: u64 = 4;

/// Estimated tokens of a text.
pub fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Estimated tokens of one content block as sent.
pub fn block_tokens(block: &ContentBlock) -> u64 {
    BLOCK_OVERHEAD
        + match block {
            ContentBlock::Text { text } => text_tokens(text),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => text_tokens(thinking) + signature.as_deref().map_or(0, text_tokens),
            ContentBlock::RedactedThinking { data } => text_tokens(data),
            ContentBlock::ToolUse { id, name, input } => {
                (id.len() as u64 + name.len() as u64 + json_bytes(input)).div_ceil(BYTES_PER_TOKEN)
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                images,
                ..
            } => {
                (tool_use_id.len() as u64 + content.len() as u64).div_ceil(BYTES_PER_TOKEN)
                    + images.len() as u64 * IMAGE_TOKENS
            }
            ContentBlock::Image { .. } => IMAGE_TOKENS,
        }
}

/// Estimated tokens of one message as sent.
pub fn message_tokens(message: &ChatMessage) -> u64 {
    MESSAGE_OVERHEAD + message.content.iter().map(block_tokens).sum::<u64>()
}

/// Estimated tokens of a run of messages.
pub fn messages_tokens(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// The bytes of a tool's input schema as [`json_bytes`] counts them (a built one's text).
pub fn schema_bytes(schema: &crate::InputSchema) -> u64 {
    match schema {
        crate::InputSchema::Built(text) => text.len() as u64,
        crate::InputSchema::Given(value) => json_bytes(value),
    }
}

/// The length of a JSON value's compact text, counted without writing it out (quotes and
/// separators included; escapes and numbers approximated).
pub fn json_bytes(value: &Value) -> u64 {
    match value {
        Value::Null => 4,
        Value::Bool(b) => 4 + u64::from(!*b),
        Value::Number(_) => 8,
        Value::String(s) => s.len() as u64 + 2,
        Value::Array(items) => 2 + items.iter().map(|v| json_bytes(v) + 1).sum::<u64>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() as u64 + 4 + json_bytes(v))
                .sum::<u64>()
        }
    }
}

/// Estimated tokens of everything a request sends: the system prompt, the tool definitions
/// and the conversation.
pub fn request_tokens(request: &ModelRequest) -> u64 {
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| (t.name.len() + t.description.len()) as u64 + schema_bytes(&t.input_schema))
        .sum();
    text_tokens(&request.system)
        + tools.div_ceil(BYTES_PER_TOKEN)
        + messages_tokens(&request.messages)
}

/// The usage of a call whose provider counted nothing, estimated from what was sent and what
/// came back, and marked [`Usage::estimated`].
pub fn estimated_usage(request: &ModelRequest, response: &ModelResponse) -> Usage {
    Usage {
        input_tokens: request_tokens(request),
        output_tokens: response.content.iter().map(block_tokens).sum(),
        estimated: true,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StopReason, ToolSpec};
    use serde_json::json;

    #[test]
    fn json_bytes_is_close_to_the_real_length() {
        let value = json!({"command": "cargo test --workspace", "timeout": 120, "flags": [true, false, null]});
        let real = serde_json::to_string(&value).map_or(0, |s| s.len()) as i64;
        let counted = json_bytes(&value) as i64;
        assert!((real - counted).abs() <= 12, "{real} vs {counted}");
    }

    #[test]
    fn a_calls_usage_is_estimated_from_what_went_and_came() {
        let request = ModelRequest {
            model: "m".into(),
            system: "s".repeat(400).into(),
            messages: vec![ChatMessage::user_text("x".repeat(40))],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "d".repeat(36),
                input_schema: json!({}).into(),
            }]
            .into(),
            max_tokens: 10,
            agent: "lead".into(),
            cache: None,
        };
        let response = ModelResponse {
            content: vec![ContentBlock::text("y".repeat(80))],
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        };
        let usage = estimated_usage(&request, &response);
        // 100 (system) + 11 (tool: 4 + 36 + 2 bytes) + 4 + 4 + 10 (message)
        assert_eq!(usage.input_tokens, 100 + 11 + 18);
        assert_eq!(usage.output_tokens, 4 + 20);
        assert!(usage.estimated);
        assert_eq!(usage.cache_read_input_tokens, 0);
    }
}
