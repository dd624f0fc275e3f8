//! The provider configuration's tests.

use super::*;
use std::collections::HashMap;

/// An environment of these variables alone.
pub(crate) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

#[test]
fn parses_and_prints_provider_names() {
    assert_eq!("anthropic".parse::<Provider>(), Ok(Provider::Anthropic));
    assert_eq!("OpenAI".parse::<Provider>(), Ok(Provider::OpenAi));
    assert_eq!(Provider::OpenAi.to_string(), "openai");
    let err = "gemini".parse::<Provider>().err();
    assert_eq!(err, Some(ConfigError::UnknownProvider("gemini".into())));
}

#[test]
fn custom_headers_are_one_a_line_and_a_bad_line_is_named() {
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "sk"),
        (CUSTOM_HEADERS_VAR, "X-Team: blue\n\n  X-Trace-Id:  a:b  \n"),
    ]);
    let config = ModelConfig::resolve(None, None, &env).unwrap();
    assert_eq!(
        config.custom_headers,
        vec![
            ("X-Team".to_string(), "blue".to_string()),
            ("X-Trace-Id".to_string(), "a:b".to_string())
        ]
    );
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "sk"),
        (CUSTOM_HEADERS_VAR, "no colon"),
    ]);
    let err = ModelConfig::resolve(None, None, &env).unwrap_err();
    assert!(err.to_string().contains("\"no colon\""), "{err}");
}

#[test]
fn anthropic_variables_win_when_both_are_set() {
    let env = env_of(&[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-oa")]);
    let config = ModelConfig::resolve(None, None, &env);
    assert_eq!(
        config,
        Ok(ModelConfig {
            provider: Provider::Anthropic,
            model: DEFAULT_ANTHROPIC_MODEL.into(),
            base_url: "https://api.anthropic.com".into(),
            api_key: Some("sk-ant".into()),
            auth: Auth::ApiKey,
            retry: RetryPolicy::default(),
            stream_idle_timeout: crate::DEFAULT_STREAM_IDLE_TIMEOUT,
            prompt_cache: crate::PromptCache::default(),
            agent_header: false,
            reasoning: crate::Reasoning::default(),
            tool_choice: crate::ToolChoice::default(),
            custom_headers: Vec::new(),
        })
    );
}

#[test]
fn an_auth_token_is_a_bearer_and_anthropic_model_names_the_model() {
    let env = env_of(&[
        ("ANTHROPIC_AUTH_TOKEN", "gw-token"),
        ("ANTHROPIC_BASE_URL", "http://gateway"),
        ("ANTHROPIC_MODEL", "claude-x"),
    ]);
    let config = ModelConfig::resolve(None, None, &env).unwrap();
    assert_eq!(config.provider, Provider::Anthropic);
    assert_eq!(config.api_key.as_deref(), Some("gw-token"));
    assert_eq!(config.auth, Auth::Bearer);
    assert_eq!(config.model, "claude-x");
    // An API key wins over the token, and TROUPE_MODEL over ANTHROPIC_MODEL.
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "sk"),
        ("ANTHROPIC_AUTH_TOKEN", "gw-token"),
        ("ANTHROPIC_MODEL", "claude-x"),
        ("TROUPE_MODEL", "mine"),
    ]);
    let config = ModelConfig::resolve(None, None, &env).unwrap();
    assert_eq!(
        (config.api_key.as_deref(), config.auth),
        (Some("sk"), Auth::ApiKey)
    );
    assert_eq!(config.model, "mine");
}

#[test]
fn aliases_resolve_on_anthropic_and_wait_for_the_servers_list_on_openai() {
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "sk"),
        ("ANTHROPIC_MODEL", "opus"),
        ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-5"),
    ]);
    let config = ModelConfig::resolve(None, None, &env).unwrap();
    assert_eq!(config.model, "claude-opus-4-5");
    let config = ModelConfig::resolve(None, Some("haiku".into()), &env).unwrap();
    assert_eq!(config.model, "claude-haiku-4-5");
    let env = env_of(&[("OPENAI_BASE_URL", "http://localhost:8080/v1")]);
    let config = ModelConfig::resolve(None, Some("sonnet".into()), &env).unwrap();
    assert_eq!(config.model, "sonnet");
}

#[test]
fn explicit_provider_and_model_win() {
    let env = env_of(&[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-oa")]);
    let config = ModelConfig::resolve(Some(Provider::OpenAi), Some("gpt-x".into()), &env);
    assert_eq!(
        config,
        Ok(ModelConfig {
            provider: Provider::OpenAi,
            model: "gpt-x".into(),
            base_url: "https://api.openai.com/v1".into(),
            api_key: Some("sk-oa".into()),
            auth: Auth::ApiKey,
            retry: RetryPolicy::default(),
            stream_idle_timeout: crate::DEFAULT_STREAM_IDLE_TIMEOUT,
            prompt_cache: crate::PromptCache::default(),
            agent_header: false,
            reasoning: crate::Reasoning::default(),
            tool_choice: crate::ToolChoice::default(),
            custom_headers: Vec::new(),
        })
    );
}

#[test]
fn a_local_openai_server_needs_no_key() {
    let env = env_of(&[
        ("OPENAI_BASE_URL", "http://localhost:11434/v1/"),
        ("TROUPE_MODEL", "qwen3"),
        ("ANTHROPIC_API_KEY", ""),
    ]);
    let config = ModelConfig::resolve(None, None, &env);
    assert_eq!(
        config,
        Ok(ModelConfig {
            provider: Provider::OpenAi,
            model: "qwen3".into(),
            base_url: "http://localhost:11434/v1".into(),
            api_key: None,
            auth: Auth::ApiKey,
            retry: RetryPolicy::default(),
            stream_idle_timeout: crate::DEFAULT_STREAM_IDLE_TIMEOUT,
            prompt_cache: crate::PromptCache::default(),
            agent_header: false,
            reasoning: crate::Reasoning::default(),
            tool_choice: crate::ToolChoice::default(),
            custom_headers: Vec::new(),
        })
    );
}

#[test]
fn the_stream_idle_deadline_comes_from_the_environment() {
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "k"),
        ("TROUPE_STREAM_IDLE_TIMEOUT_MS", "250"),
    ]);
    let config = ModelConfig::resolve(None, None, &env).map(|c| c.stream_idle_timeout);
    assert_eq!(config, Ok(Duration::from_millis(250)));
    // Zero or nonsense keeps the default rather than cutting every stream at once.
    for bad in ["0", "soon"] {
        let env = env_of(&[("ANTHROPIC_API_KEY", "k"), (STREAM_IDLE_VAR, bad)]);
        let config = ModelConfig::resolve(None, None, &env).map(|c| c.stream_idle_timeout);
        assert_eq!(config, Ok(crate::DEFAULT_STREAM_IDLE_TIMEOUT));
    }
    assert_eq!(human_duration(Duration::from_secs(90)), "90s");
    assert_eq!(human_duration(Duration::from_millis(200)), "200ms");
}

#[test]
fn anthropic_base_url_without_key_is_allowed() {
    let env = env_of(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")]);
    let config = ModelConfig::resolve(None, None, &env).map(|c| (c.provider, c.api_key));
    assert_eq!(config, Ok((Provider::Anthropic, None)));
}

#[test]
fn nothing_set_names_the_variables() {
    let err = ModelConfig::resolve(None, None, &env_of(&[])).err();
    assert_eq!(err, Some(ConfigError::NoProvider));
    let text = ConfigError::NoProvider.to_string();
    for var in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        assert!(text.contains(var), "{text}");
    }
}

#[test]
fn explicit_provider_without_key_or_url_is_refused() {
    let env = env_of(&[("OPENAI_API_KEY", "sk-oa")]);
    let err = ModelConfig::resolve(Some(Provider::Anthropic), None, &env).err();
    assert_eq!(
        err,
        Some(ConfigError::MissingKey {
            provider: Provider::Anthropic,
            key_var: "ANTHROPIC_API_KEY",
            url_var: "ANTHROPIC_BASE_URL",
        })
    );
}

#[tokio::test]
async fn an_unavailable_client_reports_its_setup_error_on_every_call() {
    let model = Unavailable {
        provider: Provider::OpenAi,
        message: "no TLS backend".into(),
    };
    let request = ModelRequest {
        model: "m".into(),
        system: "".into(),
        messages: vec![troupe_protocol::ChatMessage::user_text("hi")],
        tools: vec![].into(),
        max_tokens: 1,
        agent: "lead".into(),
        cache: None,
    };
    let result = model.stream(&request, &mut |_| {}).await;
    assert!(
        matches!(result, Err(ModelError::Client { ref message }) if message == "no TLS backend"),
        "{result:?}"
    );
    assert_eq!(model.provider(), "openai");
}

#[test]
fn builds_a_client_for_each_provider() {
    for provider in [Provider::Anthropic, Provider::OpenAi] {
        let config = ModelConfig {
            provider,
            model: "m".into(),
            base_url: "http://127.0.0.1:1".into(),
            api_key: None,
            auth: Auth::ApiKey,
            retry: RetryPolicy::default(),
            stream_idle_timeout: crate::DEFAULT_STREAM_IDLE_TIMEOUT,
            prompt_cache: crate::PromptCache::default(),
            agent_header: false,
            reasoning: crate::Reasoning::default(),
            tool_choice: crate::ToolChoice::default(),
            custom_headers: Vec::new(),
        };
        assert_eq!(config.build().provider(), provider.as_str());
    }
}
