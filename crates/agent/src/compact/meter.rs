//! Context accounting: how full an agent's context is, in tokens — what the provider counted for
//! the conversation at its last reply, plus an estimate of what was added since — against the
//! model's window.

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

/// What the provider counted at the last reply: the conversation's first `messages` messages
/// (the reply included) came to `tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Anchor {
    messages: usize,
    tokens: u64,
}

/// One agent's context accounting. Cheap: after the first reply it only estimates the messages
/// added since the provider last counted.
#[derive(Debug, Clone, Default)]
pub struct ContextMeter {
    anchor: Option<Anchor>,
    /// Estimated tokens of what every request carries besides the conversation (the system
    /// prompt and the tool definitions), used while there is no anchor.
    fixed: u64,
}

impl ContextMeter {
    /// Sets the estimate of the system prompt and tool definitions.
    pub fn set_fixed(&mut self, tokens: u64) {
        self.fixed = tokens;
    }

    /// The estimate of the system prompt and tool definitions.
    pub fn fixed(&self) -> u64 {
        self.fixed
    }

    /// Tokens the next request would take with this conversation.
    pub fn used(&self, messages: &[ChatMessage]) -> u64 {
        match self.anchor {
            Some(a) if a.messages <= messages.len() => {
                a.tokens + messages_tokens(&messages[a.messages..])
            }
            _ => self.fixed + messages_tokens(messages),
        }
    }

    /// True when the figure rests on what the provider counted, not only on the estimate.
    pub fn is_measured(&self) -> bool {
        self.anchor.is_some()
    }

    /// Records a reply: the conversation's first `messages` messages (the reply included) took
    /// `usage`. A provider that reports no prompt tokens (some local servers) leaves the
    /// estimate in charge.
    pub fn record_reply(&mut self, messages: usize, usage: &Usage) {
        let prompt =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        if prompt == 0 {
            return;
        }
        self.anchor = Some(Anchor {
            messages,
            tokens: prompt + usage.output_tokens,
        });
    }

    /// Message `index` shrank by `tokens` (a result budgeted or stubbed): the counted figure
    /// drops with it when the message was part of what was counted.
    pub fn shrink(&mut self, index: usize, tokens: u64) {
        if let Some(anchor) = self.anchor.as_mut() {
            if index < anchor.messages {
                anchor.tokens = anchor.tokens.saturating_sub(tokens);
            }
        }
    }

    /// Forgets what the provider counted (the conversation was replaced): estimate afresh.
    pub fn reset(&mut self) {
        self.anchor = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_bytes_is_close_to_the_real_length() {
        let value = json!({"command": "cargo test --workspace", "timeout": 120, "flags": [true, false, null]});
        let real = serde_json::to_string(&value).unwrap().len() as i64;
        let counted = json_bytes(&value) as i64;
        assert!((real - counted).abs() <= 12, "{real} vs {counted}");
    }

    #[test]
    fn the_meter_adds_what_came_after_the_last_reply() {
        let mut meter = ContextMeter::default();
        meter.set_fixed(1_000);
        let mut messages = vec![ChatMessage::user_text("x".repeat(400))];
        let cold = meter.used(&messages);
        assert_eq!(cold, 1_000 + 4 + 4 + 100);
        assert!(!meter.is_measured());
        messages.push(ChatMessage::assistant_text("ok"));
        meter.record_reply(
            2,
            &Usage {
                input_tokens: 1_200,
                output_tokens: 3,
                cache_read_input_tokens: 500,
                ..Usage::default()
            },
        );
        assert_eq!(meter.used(&messages), 1_703);
        messages.push(ChatMessage::user_text("y".repeat(40)));
        assert_eq!(meter.used(&messages), 1_703 + 4 + 4 + 10);
        meter.shrink(0, 50);
        assert_eq!(meter.used(&messages), 1_653 + 18);
        meter.shrink(2, 5); // after the anchor: already estimated afresh each time
        assert_eq!(meter.used(&messages), 1_653 + 18);
        // A conversation shorter than the anchor (replaced) falls back to the estimate.
        messages.truncate(1);
        assert_eq!(meter.used(&messages), cold);
    }

    #[test]
    fn a_reply_without_prompt_tokens_keeps_the_estimate() {
        let mut meter = ContextMeter::default();
        meter.record_reply(1, &Usage::default());
        assert!(!meter.is_measured());
    }
}
