//! What settings and Claude Code's variables change about model calls when no flag says
//! otherwise: `alwaysThinkingEnabled` turns extended thinking on, `CLAUDE_CODE_MAX_OUTPUT_TOKENS`
//! sets the output limit per call.

use troupe_model::{Reasoning, Thinking};
use troupe_settings::Settings;

/// `--max-tokens`' default: a value equal to it is taken as no flag.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Claude Code's variable for the output token limit of one model call.
pub const MAX_OUTPUT_TOKENS_VAR: &str = "CLAUDE_CODE_MAX_OUTPUT_TOKENS";

/// The reasoning the flags ask for; with no thinking flag, `alwaysThinkingEnabled: true` turns
/// thinking on as `--thinking enabled` does.
pub fn thinking(flags: Reasoning, settings: &Settings) -> Reasoning {
    let always =
        settings.other.get("alwaysThinkingEnabled") == Some(&serde_json::Value::Bool(true));
    match (flags.thinking, always) {
        (Thinking::Unset, true) => Reasoning {
            thinking: Thinking::Adaptive,
            ..flags
        },
        _ => flags,
    }
}

/// The output token limit: `--max-tokens` when it is not its default, else
/// `CLAUDE_CODE_MAX_OUTPUT_TOKENS` (the settings' `env` or the environment), else the default.
/// A value of the variable that is not a positive number is a warning and left out.
pub fn max_output_tokens(
    flag: u32,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> u32 {
    if flag != DEFAULT_MAX_TOKENS {
        return flag;
    }
    let Some(value) = env(MAX_OUTPUT_TOKENS_VAR).filter(|v| !v.trim().is_empty()) else {
        return flag;
    };
    match value.trim().parse::<u32>() {
        Ok(tokens) if tokens > 0 => tokens,
        _ => {
            warnings.push(format!(
                "{MAX_OUTPUT_TOKENS_VAR}={value} is not a number of tokens; troupe uses {flag}"
            ));
            flag
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_thinking_turns_thinking_on_unless_a_flag_decides() {
        let settings = Settings::parse(r#"{"alwaysThinkingEnabled": true}"#, "t").unwrap();
        let on = thinking(Reasoning::default(), &settings);
        assert_eq!(on.thinking, Thinking::Adaptive);
        let off = Reasoning {
            thinking: Thinking::Off,
            effort: None,
        };
        assert_eq!(thinking(off, &settings).thinking, Thinking::Off);
        let unset = thinking(Reasoning::default(), &Settings::default());
        assert_eq!(unset.thinking, Thinking::Unset);
    }

    #[test]
    fn the_variable_sets_the_output_limit_unless_the_flag_does() {
        let mut warnings = Vec::new();
        let env = |value: &'static str| move |_: &str| Some(value.to_string());
        assert_eq!(max_output_tokens(8192, &env("32000"), &mut warnings), 32000);
        assert_eq!(max_output_tokens(100, &env("32000"), &mut warnings), 100);
        assert!(warnings.is_empty());
        assert_eq!(max_output_tokens(8192, &env("lots"), &mut warnings), 8192);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
