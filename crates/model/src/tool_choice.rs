//! What an OpenAI-compatible request asks of the model's tool use (`tool_choice`): `auto`, the
//! model decides (the default), or `required`, every answer to a request with tools calls one
//! (`TROUPE_OPENAI_TOOL_CHOICE=required`: for a small local model that never calls a tool of
//! its own accord, and for tests against a real server; the run then ends only at
//! `--max-turns`, as every answer is a call).

use crate::kind::ConfigError;
use std::str::FromStr;

pub use crate::kind::TOOL_CHOICE_VAR;

/// The `tool_choice` of requests with tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model calls a tool or answers (`"auto"`).
    #[default]
    Auto,
    /// The model must call a tool (`"required"`).
    Required,
}

impl ToolChoice {
    /// The value as the wire and the variable spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        }
    }

    /// The value as JSON text (`"auto"`, quotes included).
    pub(crate) fn json(self) -> &'static [u8] {
        match self {
            ToolChoice::Auto => b"\"auto\"",
            ToolChoice::Required => b"\"required\"",
        }
    }
}

impl FromStr for ToolChoice {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            _ => Err(ConfigError::BadToolChoice(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::tests::env_of;
    use crate::ModelConfig;

    #[test]
    fn the_variable_chooses_auto_or_required_and_refuses_the_rest() {
        let resolve = |value: &str| {
            let env = env_of(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
                (TOOL_CHOICE_VAR, value),
            ]);
            ModelConfig::resolve(None, None, &env).map(|c| c.tool_choice)
        };
        assert_eq!(resolve(""), Ok(ToolChoice::Auto));
        assert_eq!(resolve("auto"), Ok(ToolChoice::Auto));
        assert_eq!(resolve(" Required "), Ok(ToolChoice::Required));
        let err = resolve("any").unwrap_err().to_string();
        assert!(err.contains("TROUPE_OPENAI_TOOL_CHOICE=\"any\""), "{err}");
        assert!(err.contains("auto or required"), "{err}");
    }
}
