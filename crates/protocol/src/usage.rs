//! Token usage, summed per call, per turn and per agent.

use serde::{Deserialize, Serialize};

/// Tokens used, in the field names of Claude Code's headless JSON output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens not read from cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// True when the figures are troupe's estimate (about 4 bytes a token) because the
    /// provider reported none (llama.cpp's streams); absent from the wire when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Adds another usage into this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.estimated |= other.estimated;
    }

    /// All tokens, input and output.
    pub fn total(&self) -> u64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
    }

    /// The share of prompt tokens read from the provider's cache (0 to 1); `None` before any
    /// prompt token was counted.
    pub fn cache_hit_rate(&self) -> Option<f64> {
        let prompt =
            self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens;
        (prompt > 0).then(|| self.cache_read_input_tokens as f64 / prompt as f64)
    }

    /// The cache hit rate as shown to people: `cache 97%`, or `cache -` before any prompt.
    pub fn cache_label(&self) -> String {
        match self.cache_hit_rate() {
            Some(rate) => format!("cache {:.0}%", rate * 100.0),
            None => "cache -".to_string(),
        }
    }
}

/// One agent's running token total, as it publishes it after every model reply (volatile:
/// the roster keeps the durable figure).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentUsage {
    /// The model it runs on (prices differ per model).
    pub model: String,
    /// Tokens used so far.
    pub usage: Usage,
}
