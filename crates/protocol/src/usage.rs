//! Token usage, summed per call, per turn and per agent.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// Tokens per model an agent called, so each call is priced at the model it used (a `/model`
/// switch never re-prices the calls before it). On the wire an object keyed by model name.
///
/// Kept as a list sorted by model name: an agent calls one model or a few, and a map's node
/// held room for eleven (some 600 bytes for one model, in every roster member and every
/// published usage of a thousand teammates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageByModel(Vec<(String, Usage)>);

impl UsageByModel {
    /// Adds one call's (or one agent's) tokens on `model`.
    pub fn add(&mut self, model: &str, usage: &Usage) {
        match self.0.binary_search_by(|(m, _)| m.as_str().cmp(model)) {
            Ok(i) => self.0[i].1.add(usage),
            Err(i) => self.0.insert(i, (model.to_string(), *usage)),
        }
    }

    /// Adds every model's tokens of `other`.
    pub fn merge(&mut self, other: &UsageByModel) {
        for (model, usage) in &other.0 {
            self.add(model, usage);
        }
    }

    /// Whether no tokens were counted on any model.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|(_, u)| u.total() == 0)
    }

    /// Every model's tokens together.
    pub fn total(&self) -> Usage {
        let mut total = Usage::default();
        for (_, usage) in &self.0 {
            total.add(usage);
        }
        total
    }

    /// Each model with its tokens, by model name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Usage)> {
        self.0.iter().map(|(m, u)| (m.as_str(), u))
    }

    /// The tokens on `model`, if it was called.
    pub fn get(&self, model: &str) -> Option<&Usage> {
        self.0
            .binary_search_by(|(m, _)| m.as_str().cmp(model))
            .ok()
            .map(|i| &self.0[i].1)
    }
}

impl Serialize for UsageByModel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(m, u)| (m, u)))
    }
}

impl<'de> Deserialize<'de> for UsageByModel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Through a map: sorted by name, and a name given twice keeps its last value, as before.
        let map = BTreeMap::<String, Usage>::deserialize(deserializer)?;
        Ok(UsageByModel(map.into_iter().collect()))
    }
}

/// One agent's running token total, as it publishes it after every model reply (volatile:
/// the roster keeps the durable figure).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentUsage {
    /// The model it runs on now (prices differ per model).
    pub model: String,
    /// Tokens used so far.
    pub usage: Usage,
    /// The same tokens per model called (empty from older versions: all on `model`).
    #[serde(default, skip_serializing_if = "UsageByModel::is_empty")]
    pub by_model: UsageByModel,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_by_model_adds_per_model_and_round_trips_as_an_object() {
        let call = |input| Usage {
            input_tokens: input,
            ..Usage::default()
        };
        let mut by = UsageByModel::default();
        assert!(by.is_empty());
        by.add("sonnet", &call(10));
        by.add("opus", &call(5));
        by.add("sonnet", &call(1));
        assert_eq!(by.total().input_tokens, 16);
        assert_eq!(by.get("sonnet").map(|u| u.input_tokens), Some(11));
        let json = serde_json::to_value(&by).unwrap_or_default();
        assert_eq!(json["opus"]["input_tokens"], 5);
        let back: UsageByModel = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, by);
        // Written in name order whatever the order read; a name given twice keeps its last.
        let read: UsageByModel = serde_json::from_str(
            r#"{"b":{"input_tokens":1},"a":{"input_tokens":2},"b":{"input_tokens":3}}"#,
        )
        .unwrap_or_default();
        assert_eq!(
            serde_json::to_string(&read).unwrap_or_default(),
            r#"{"a":{"input_tokens":2,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"b":{"input_tokens":3,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}"#
        );
        let mut sum = UsageByModel::default();
        sum.merge(&by);
        sum.merge(&by);
        assert_eq!(sum.total().input_tokens, 32);
    }
}
