//! What the environment says about the provider, checked: a base URL troupe can call, and a
//! note when both providers' variables are set.

use crate::kind::{ConfigError, Provider, AUTH_TOKEN_VAR};

/// Refuses a base URL without an `http://` or `https://` scheme and a host.
pub(crate) fn check_base_url(var: &'static str, url: &str) -> Result<(), ConfigError> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
        _ => Err(ConfigError::BadBaseUrl {
            var,
            value: url.to_string(),
            suggested: url
                .split_once("://")
                .map_or(url, |(_, rest)| rest)
                .to_string(),
        }),
    }
}

/// When no provider was named and the environment sets both providers' variables with an
/// OpenAI-compatible endpoint among them: a one-line note saying which one troupe chose, why,
/// and how to choose the other (`None` when nothing is ambiguous).
pub fn ambiguity_note(
    provider: Option<Provider>,
    env: &impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if provider.is_some() {
        return None;
    }
    let set = |names: &[&'static str]| -> Vec<&'static str> {
        names
            .iter()
            .copied()
            .filter(|n| env(n).is_some_and(|v| !v.trim().is_empty()))
            .collect()
    };
    let anthropic = set(&["ANTHROPIC_API_KEY", AUTH_TOKEN_VAR, "ANTHROPIC_BASE_URL"]);
    let openai = set(&["OPENAI_BASE_URL", "OPENAI_API_KEY"]);
    if anthropic.is_empty() || !openai.contains(&"OPENAI_BASE_URL") {
        return None;
    }
    Some(format!(
        "both {} and {} are set; using anthropic (its variables are checked first). Pass --provider openai to use the OpenAI-compatible server at OPENAI_BASE_URL",
        anthropic.join(", "),
        openai.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::tests::env_of;
    use crate::ModelConfig;

    #[test]
    fn a_base_url_without_a_scheme_is_refused_with_the_fix() {
        let env = env_of(&[("OPENAI_BASE_URL", "localhost:8080/v1")]);
        let err = ModelConfig::resolve(None, None, &env).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("OPENAI_BASE_URL=http://localhost:8080/v1"),
            "{text}"
        );
        for bad in ["ftp://host", "http://", "//host"] {
            let env = env_of(&[("ANTHROPIC_BASE_URL", bad)]);
            assert!(
                matches!(
                    ModelConfig::resolve(None, None, &env),
                    Err(ConfigError::BadBaseUrl { .. })
                ),
                "{bad}"
            );
        }
        let env = env_of(&[("ANTHROPIC_BASE_URL", "HTTPS://gw.example/")]);
        assert!(ModelConfig::resolve(None, None, &env).is_ok());
    }

    #[test]
    fn ambiguous_variables_get_a_note_naming_the_choice_and_the_other() {
        let env = env_of(&[
            ("ANTHROPIC_API_KEY", "sk"),
            ("OPENAI_BASE_URL", "http://localhost:8080/v1"),
        ]);
        let note = ambiguity_note(None, &env).unwrap();
        assert!(note.contains("using anthropic"), "{note}");
        assert!(note.contains("--provider openai"), "{note}");
        assert_eq!(ambiguity_note(Some(Provider::Anthropic), &env), None);
        let both_keys = env_of(&[("ANTHROPIC_API_KEY", "sk"), ("OPENAI_API_KEY", "sk")]);
        assert_eq!(ambiguity_note(None, &both_keys), None);
    }
}
