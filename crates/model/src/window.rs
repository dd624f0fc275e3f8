//! Context windows: how many tokens (prompt and reply together) the common Anthropic and OpenAI
//! models take, so an agent knows how full its conversation is. Any other model (a local
//! server) says so with `--context-window N` or the `contextWindow` setting.

/// The window assumed for a model that is not in the table and was not given one: the size of
/// most current mid-size models. Too large only costs a prompt-too-long error, which compacts
/// and retries; too small compacts early.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Known windows, by model-name prefix; the first match wins, so longer prefixes come first.
const KNOWN: &[(&str, u64)] = &[
    // Anthropic: every Claude 3, 3.5, 3.7, 4 and 4.5 model (the 1M beta is opt-in).
    ("claude-", 200_000),
    ("claude", 200_000),
    // OpenAI.
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3-mini", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// The context window of a well-known model, in tokens; `None` for any other.
pub fn known_context_window(model: &str) -> Option<u64> {
    if crate::alias::split_1m(model.trim()).1 {
        return Some(crate::alias::CONTEXT_1M_WINDOW);
    }
    let name = model.to_ascii_lowercase();
    // Provider-qualified names (`anthropic/claude-…`, `openai/gpt-4o`) name the same models.
    let name = name.rsplit('/').next().unwrap_or(&name);
    KNOWN
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_models_are_known_and_others_are_not() {
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(
            known_context_window("claude-3-5-haiku-latest"),
            Some(200_000)
        );
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_context_window("gpt-4"), Some(8_192));
        assert_eq!(known_context_window("o1-mini"), Some(128_000));
        assert_eq!(known_context_window("openai/gpt-4o"), Some(128_000));
        assert_eq!(known_context_window("GPT-4O"), Some(128_000));
        assert_eq!(known_context_window("qwen2.5-coder:7b"), None);
        assert_eq!(known_context_window("local-model"), None);
        assert_eq!(
            known_context_window("claude-sonnet-4-5[1m]"),
            Some(1_000_000)
        );
    }
}
