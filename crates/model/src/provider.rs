//! Choosing a provider, model, endpoint and key from flags and environment variables.

use crate::anthropic::{self, AnthropicClient};
use crate::endpoint::Configure;
use crate::openai::{self, OpenAiClient};
use crate::retry::RetryPolicy;
use crate::{Model, ModelError, ModelRequest, ModelResponse, StreamEvent};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

pub use crate::alias::DEFAULT_ANTHROPIC_MODEL;
pub use crate::kind::{
    human_duration, ConfigError, Provider, AUTH_TOKEN_VAR, CUSTOM_HEADERS_VAR,
    DEFAULT_OPENAI_MODEL, MODEL_VAR, RETRY_BASE_VAR, STREAM_IDLE_VAR,
};

/// Everything needed to build a model client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// Wire format.
    pub provider: Provider,
    /// Model name as the provider knows it.
    pub model: String,
    /// Endpoint base (Anthropic without `/v1`, OpenAI with it).
    pub base_url: String,
    /// API key, if any.
    pub api_key: Option<String>,
    /// How the key is sent: as the provider's API key, or as a bearer token
    /// (`ANTHROPIC_AUTH_TOKEN`, for gateways).
    pub auth: Auth,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// How long a stream may go without a content event before the attempt is retried.
    pub stream_idle_timeout: Duration,
    /// Prompt caching: on unless `DISABLE_PROMPT_CACHING` (or the `promptCaching` setting,
    /// applied by the binary) turns it off.
    pub prompt_cache: crate::PromptCache,
    /// Whether calls name their agent in a header, for a test server
    /// ([`crate::AGENT_HEADER_VAR`]); off unless asked for.
    pub agent_header: bool,
    /// Extended thinking and effort (`--thinking`, `--max-thinking-tokens`, `--effort`);
    /// nothing unless asked for.
    pub reasoning: crate::Reasoning,
    /// The `tool_choice` an OpenAI-compatible server is sent with tools
    /// ([`crate::tool_choice::TOOL_CHOICE_VAR`]); `auto` unless asked for.
    pub tool_choice: crate::ToolChoice,
    /// Headers added to every Anthropic request: `ANTHROPIC_CUSTOM_HEADERS`, one `Name: value`
    /// a line.
    pub custom_headers: Vec<(String, String)>,
}

/// How a credential is sent to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Auth {
    /// The provider's own header (`x-api-key` for Anthropic, a bearer token for OpenAI).
    #[default]
    ApiKey,
    /// `Authorization: Bearer …` (Anthropic's `ANTHROPIC_AUTH_TOKEN`, used by gateways).
    Bearer,
    /// Both `x-api-key` and `Authorization: Bearer`, as Claude Code sends the key its
    /// `apiKeyHelper` printed.
    Both,
}

/// The headers of `ANTHROPIC_CUSTOM_HEADERS`: one `Name: value` a line, blank lines skipped. A
/// line that is not a valid header is an error naming it.
fn custom_headers(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut headers = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = || ConfigError::BadCustomHeader(line.to_string());
        let (name, value) = line.split_once(':').ok_or_else(bad)?;
        let (name, value) = (name.trim(), value.trim());
        reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        reqwest::header::HeaderValue::from_str(value).map_err(|_| bad())?;
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(headers)
}

/// The model Claude Code's users name in the environment.
pub const ANTHROPIC_MODEL_VAR: &str = "ANTHROPIC_MODEL";

impl ModelConfig {
    /// Resolves the configuration from flags and the environment (`env` looks a variable up;
    /// empty values count as unset). An explicit provider wins; otherwise the Anthropic
    /// variables are checked first, then the OpenAI ones.
    pub fn resolve(
        provider: Option<Provider>,
        model: Option<String>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ConfigError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let provider = match provider {
            Some(p) => p,
            None if var("ANTHROPIC_API_KEY").is_some()
                || var(AUTH_TOKEN_VAR).is_some()
                || var("ANTHROPIC_BASE_URL").is_some() =>
            {
                Provider::Anthropic
            }
            None if var("OPENAI_API_KEY").is_some() || var("OPENAI_BASE_URL").is_some() => {
                Provider::OpenAi
            }
            None => return Err(ConfigError::NoProvider),
        };
        let (key_var, url_var, default_url, default_model) = match provider {
            Provider::Anthropic => (
                anthropic::KEY_VAR,
                "ANTHROPIC_BASE_URL",
                anthropic::DEFAULT_BASE_URL,
                DEFAULT_ANTHROPIC_MODEL,
            ),
            Provider::OpenAi => (
                openai::KEY_VAR,
                "OPENAI_BASE_URL",
                openai::DEFAULT_BASE_URL,
                DEFAULT_OPENAI_MODEL,
            ),
        };
        let (api_key, auth) = match (var(key_var), provider) {
            (Some(key), _) => (Some(key), Auth::ApiKey),
            (None, Provider::Anthropic) => (var(AUTH_TOKEN_VAR), Auth::Bearer),
            (None, Provider::OpenAi) => (None, Auth::ApiKey),
        };
        let auth = if api_key.is_some() {
            auth
        } else {
            Auth::ApiKey
        };
        let custom_url = var(url_var);
        if api_key.is_none() && custom_url.is_none() {
            // The public endpoints always need a key; fail now rather than with a 401 later.
            return Err(ConfigError::MissingKey {
                provider,
                key_var,
                url_var,
            });
        }
        let base_url = custom_url
            .unwrap_or_else(|| default_url.to_owned())
            .trim()
            .trim_end_matches('/')
            .to_owned();
        crate::provider_env::check_base_url(url_var, &base_url)?;
        let model = model
            .filter(|m| !m.trim().is_empty())
            .or_else(|| var(MODEL_VAR))
            .or_else(|| match provider {
                Provider::Anthropic => var(ANTHROPIC_MODEL_VAR),
                Provider::OpenAi => None,
            })
            .unwrap_or_else(|| default_model.to_owned());
        // Claude Code's aliases are Anthropic's model names; an OpenAI-compatible server is
        // asked which names it knows before the run starts (see `alias::check_served`).
        let model = match provider {
            Provider::Anthropic => crate::alias::resolve(&model, &var),
            Provider::OpenAi => model.trim().to_string(),
        };
        // An operator (or a test) may shorten the backoff; the number of attempts stays bounded.
        let mut retry = RetryPolicy::default();
        if let Some(ms) = var(RETRY_BASE_VAR).and_then(|v| v.trim().parse::<u64>().ok()) {
            retry.base_delay = Duration::from_millis(ms);
            retry.max_delay = retry
                .max_delay
                .min(Duration::from_millis(ms.saturating_mul(40).max(1)));
        }
        let stream_idle_timeout = var(STREAM_IDLE_VAR)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(crate::DEFAULT_STREAM_IDLE_TIMEOUT, Duration::from_millis);
        let custom_headers = match provider {
            Provider::Anthropic => var(CUSTOM_HEADERS_VAR)
                .map(|v| custom_headers(&v))
                .transpose()?
                .unwrap_or_default(),
            Provider::OpenAi => Vec::new(),
        };
        let tool_choice = match var(crate::tool_choice::TOOL_CHOICE_VAR) {
            Some(value) => value.parse()?,
            None => crate::ToolChoice::default(),
        };
        Ok(ModelConfig {
            provider,
            model,
            base_url,
            api_key,
            auth,
            retry,
            stream_idle_timeout,
            prompt_cache: crate::PromptCache::from_env(&var),
            agent_header: var(crate::AGENT_HEADER_VAR).is_some_and(|v| v.trim() == "1"),
            reasoning: crate::Reasoning::default(),
            tool_choice,
            custom_headers,
        })
    }

    /// The model id `name` stands for on this configuration's provider: Claude Code's aliases
    /// become Anthropic ids ([`crate::alias::resolve`]; `env` looks up the override variables);
    /// on an OpenAI-compatible server a name is sent as given.
    pub fn named(&self, name: &str, env: &impl Fn(&str) -> Option<String>) -> String {
        match self.provider {
            Provider::Anthropic => crate::alias::resolve(name, env),
            Provider::OpenAi => name.trim().to_string(),
        }
    }

    /// A client for this configuration. Setting up the HTTP client practically never fails;
    /// if it does, the returned model fails every call with that error rather than panicking.
    pub fn build(&self) -> Arc<dyn Model> {
        let built: Result<Arc<dyn Model>, ModelError> = match self.provider {
            Provider::Anthropic => {
                AnthropicClient::new(self.base_url.clone(), self.api_key.clone()).map(|c| {
                    Arc::new(
                        c.with_bearer(self.auth == Auth::Bearer)
                            .with_key_in_both_headers(self.auth == Auth::Both)
                            .with_custom_headers(self.custom_headers.clone())
                            .with_agent_header(self.agent_header)
                            .with_prompt_cache(self.prompt_cache)
                            .with_retry_policy(self.retry)
                            .with_stream_idle_timeout(self.stream_idle_timeout)
                            .with_reasoning(self.reasoning),
                    ) as Arc<dyn Model>
                })
            }
            Provider::OpenAi => {
                OpenAiClient::new(self.base_url.clone(), self.api_key.clone()).map(|c| {
                    Arc::new(
                        c.with_prompt_cache(self.prompt_cache)
                            .with_agent_header(self.agent_header)
                            .with_retry_policy(self.retry)
                            .with_stream_idle_timeout(self.stream_idle_timeout)
                            .with_reasoning(self.reasoning)
                            .with_tool_choice(self.tool_choice),
                    ) as Arc<dyn Model>
                })
            }
        };
        built.unwrap_or_else(|error| {
            tracing::error!(%error, "model client unavailable");
            Arc::new(Unavailable {
                provider: self.provider,
                message: error.to_string(),
            })
        })
    }
}

/// A model whose client could not be set up: every call reports why.
#[derive(Debug)]
struct Unavailable {
    provider: Provider,
    message: String,
}

#[async_trait]
impl Model for Unavailable {
    fn provider(&self) -> &str {
        self.provider.as_str()
    }

    async fn stream(
        &self,
        _request: &ModelRequest,
        _on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Client {
            message: self.message.clone(),
        })
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
pub(crate) mod tests;
