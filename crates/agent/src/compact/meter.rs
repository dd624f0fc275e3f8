//! Context accounting: how full an agent's context is, in tokens — what the provider counted for
//! the conversation at its last reply, plus an estimate of what was added since — against the
//! model's window.

use troupe_protocol::{ChatMessage, Usage};

pub use troupe_model::estimate::{
    block_tokens, json_bytes, message_tokens, messages_tokens, schema_bytes, text_tokens,
    BYTES_PER_TOKEN,
};

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
        // An estimated figure is no better than the meter's own.
        if prompt == 0 || usage.estimated {
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
