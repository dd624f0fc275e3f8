//! Extended thinking and reasoning effort: what `--thinking`, `--max-thinking-tokens` and
//! `--effort` ask for (the flags the Agent SDKs pass), and what each wire makes of it.
//!
//! - Anthropic: models that think adaptively (Claude 4.6 and later) get
//!   `thinking: {type: adaptive}` with `output_config: {effort}`; older ones get
//!   `thinking: {type: enabled, budget_tokens}`, the budget from `--max-thinking-tokens` or
//!   from the effort, with `max_tokens` raised above the budget as the API requires.
//! - OpenAI-compatible servers: `reasoning_effort` (`low`, `medium`, `high`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;

/// The smallest thinking budget the Anthropic API takes.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// Whether and how the model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thinking {
    /// Nothing asked: no thinking unless an effort is given.
    #[default]
    Unset,
    /// No extended thinking (`--thinking disabled`, `--max-thinking-tokens 0`).
    Off,
    /// The model decides how much to think (`--thinking adaptive`).
    Adaptive,
    /// A fixed budget of thinking tokens (`--max-thinking-tokens N`).
    Budget(u32),
}

/// How hard the model works on an answer (`--effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// Minimal thinking, fastest answers.
    Low,
    /// Moderate thinking.
    Medium,
    /// Deep reasoning (the API's default).
    High,
    /// Deeper still (Claude Opus 4.7; `high` elsewhere).
    XHigh,
    /// Maximum effort.
    Max,
}

impl Effort {
    /// The level as the flag and the APIs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// The thinking budget this effort stands for on a model that needs one (the budgets of
    /// Claude Code's "think", "think hard" and "ultrathink").
    pub fn budget(self) -> u32 {
        match self {
            Effort::Low => 4_000,
            Effort::Medium => 10_000,
            Effort::High => 16_000,
            Effort::XHigh => 24_000,
            Effort::Max => 31_999,
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            "xhigh" => Ok(Effort::XHigh),
            "max" => Ok(Effort::Max),
            _ => Err(format!(
                "unknown effort {s:?}: use low, medium, high, xhigh or max"
            )),
        }
    }
}

/// Thinking and effort together, as the flags set them; sent with every call of the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Reasoning {
    /// Whether and how the model thinks.
    pub thinking: Thinking,
    /// How hard it works, if asked.
    pub effort: Option<Effort>,
}

/// What a Messages request carries for [`Reasoning`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnthropicReasoning {
    /// The `thinking` object, if any.
    pub thinking: Option<Value>,
    /// The `output_config` object, if any.
    pub output_config: Option<Value>,
    /// `max_tokens`, above the thinking budget.
    pub max_tokens: u32,
}

impl Reasoning {
    /// The reasoning the SDK flags ask for: `--thinking` (`adaptive`, `enabled`, `disabled`),
    /// `--max-thinking-tokens` (0 turns thinking off; the SDKs send it for
    /// `{type: enabled, budget_tokens}`) and `--effort`.
    pub fn from_flags(
        thinking: Option<&str>,
        max_thinking_tokens: Option<u32>,
        effort: Option<&str>,
    ) -> Result<Reasoning, String> {
        let effort = effort
            .map(|e| {
                e.parse::<Effort>()
                    .map_err(|why| format!("--effort: {why}"))
            })
            .transpose()?;
        let mode = thinking.map(|t| t.trim().to_ascii_lowercase());
        let thinking = match (mode.as_deref(), max_thinking_tokens) {
            (Some("disabled"), _) | (_, Some(0)) => Thinking::Off,
            (Some("adaptive" | "enabled") | None, Some(budget)) => Thinking::Budget(budget),
            (Some("adaptive" | "enabled"), None) => Thinking::Adaptive,
            (None, None) => Thinking::Unset,
            (Some(other), _) => {
                return Err(format!(
                    "--thinking: unknown mode {other:?}: use adaptive, enabled or disabled"
                ))
            }
        };
        Ok(Reasoning { thinking, effort })
    }

    /// True when nothing is asked for.
    pub fn is_unset(&self) -> bool {
        *self == Reasoning::default()
    }

    /// The fields of a Messages request to `model` whose `max_tokens` would be `max_tokens`.
    pub(crate) fn anthropic(&self, model: &str, max_tokens: u32) -> AnthropicReasoning {
        let version = claude_version(model);
        let adaptive = version.is_some_and(|v| v >= (4, 6));
        let effort = self.effort.map(|e| match e {
            Effort::XHigh if version.is_none_or(|v| v < (4, 7)) => Effort::High,
            other => other,
        });
        let mut out = AnthropicReasoning {
            thinking: None,
            output_config: None,
            max_tokens,
        };
        // `None`: no thinking; `Some(budget)`: thinking, with this budget where one is needed.
        let wanted = match self.thinking {
            Thinking::Off => None,
            Thinking::Unset if effort.is_none() => None,
            Thinking::Unset | Thinking::Adaptive => {
                Some(effort.map_or(Effort::High.budget(), Effort::budget))
            }
            Thinking::Budget(budget) => Some(budget),
        };
        if adaptive {
            if wanted.is_some() {
                out.thinking = Some(json!({"type": "adaptive"}));
            }
            out.output_config = effort.map(|e| json!({"effort": e.as_str()}));
        } else if let Some(budget) = wanted {
            let budget = budget.max(MIN_THINKING_BUDGET);
            out.thinking = Some(json!({"type": "enabled", "budget_tokens": budget}));
            if max_tokens <= budget {
                // The answer keeps the room it had, above the budget.
                out.max_tokens = budget.saturating_add(max_tokens.max(1));
            }
        }
        out
    }

    /// `reasoning_effort` for an OpenAI-compatible server, if anything is asked.
    pub(crate) fn openai_effort(&self) -> Option<&'static str> {
        let effort = match (self.thinking, self.effort) {
            (Thinking::Off, _) => return None,
            (_, Some(effort)) => effort,
            (Thinking::Budget(budget), None) if budget <= Effort::Low.budget() => Effort::Low,
            (Thinking::Budget(budget), None) if budget <= Effort::Medium.budget() => Effort::Medium,
            (Thinking::Budget(_), None) => Effort::High,
            (Thinking::Unset | Thinking::Adaptive, None) => return None,
        };
        Some(match effort {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High | Effort::XHigh | Effort::Max => "high",
        })
    }
}

/// The (major, minor) version of a Claude model's name: `claude-sonnet-4-5` is (4, 5),
/// `claude-opus-5` (5, 0), `claude-3-7-sonnet-20250219` (3, 7), Bedrock's
/// `us.anthropic.claude-opus-4-6-v1` (4, 6); `None` for names that are not Claude's.
fn claude_version(model: &str) -> Option<(u32, u32)> {
    let lower = model.to_ascii_lowercase();
    let at = lower.find("claude-")?;
    let numbers: Vec<u32> = lower[at + "claude-".len()..]
        .split(['-', '.', '@', ':'])
        .filter_map(|part| part.parse::<u32>().ok())
        // A date (20250514) is not part of the version.
        .take_while(|n| *n < 100)
        .take(2)
        .collect();
    match numbers.as_slice() {
        [major, minor] => Some((*major, *minor)),
        [major] => Some((*major, 0)),
        _ => None,
    }
}

#[cfg(test)]
#[path = "reasoning_tests.rs"]
mod tests;
