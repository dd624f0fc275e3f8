//! What a model configuration is made of before any client: the provider kinds, the variables
//! read, and why a configuration cannot be made. The clients and the wire code read these;
//! nothing here knows a client.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use thiserror::Error;

/// A bearer token for an Anthropic gateway, sent when no API key is set.
pub const AUTH_TOKEN_VAR: &str = "ANTHROPIC_AUTH_TOKEN";
/// Claude Code's extra request headers, one `Name: value` a line.
pub const CUSTOM_HEADERS_VAR: &str = "ANTHROPIC_CUSTOM_HEADERS";
/// Environment variable choosing the `tool_choice` sent to an OpenAI-compatible server.
pub const TOOL_CHOICE_VAR: &str = "TROUPE_OPENAI_TOOL_CHOICE";

/// Default OpenAI model.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// Environment variable naming the model when `--model` is not given.
pub const MODEL_VAR: &str = "TROUPE_MODEL";
/// Environment variable overriding the first retry wait, in milliseconds.
pub const RETRY_BASE_VAR: &str = "TROUPE_RETRY_BASE_MS";
/// Environment variable overriding the stream idle deadline, in milliseconds.
pub const STREAM_IDLE_VAR: &str = "TROUPE_STREAM_IDLE_TIMEOUT_MS";

/// A duration as people read it: whole seconds as `90s`, anything else in milliseconds.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A wire format and its vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions, or any server compatible with it.
    OpenAi,
}

impl Provider {
    /// The provider's name as users type it.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" => Ok(Provider::OpenAi),
            _ => Err(ConfigError::UnknownProvider(s.to_owned())),
        }
    }
}

/// Why no usable model configuration could be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The provider name is not one troupe knows.
    #[error("unknown provider {0:?}: use anthropic or openai")]
    UnknownProvider(String),
    /// Neither provider's variables are set.
    #[error(
        "no model provider configured: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL), \
         or OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)"
    )]
    NoProvider,
    /// The chosen provider's public endpoint needs a key and none is set.
    #[error(
        "{provider} needs an API key: set {key_var}, or {url_var} for a server that needs none"
    )]
    MissingKey {
        /// The chosen provider.
        provider: Provider,
        /// The key variable to set.
        key_var: &'static str,
        /// The base-URL variable that would point elsewhere.
        url_var: &'static str,
    },
    /// A base URL that is not an `http://` or `https://` URL (`localhost:8080/v1`): the HTTP
    /// client could only say "builder error" later.
    #[error(
        "{var}={value} is not a URL troupe can call: it needs a scheme, e.g. {var}=http://{suggested} \
         (or https:// for a server with TLS)"
    )]
    BadBaseUrl {
        /// The variable it came from.
        var: &'static str,
        /// Its value.
        value: String,
        /// The value with `http://` in front, as a suggestion.
        suggested: String,
    },
    /// A line of `ANTHROPIC_CUSTOM_HEADERS` that is not a `Name: value` header.
    #[error("{var}: {0:?} is not a `Name: value` header", var = CUSTOM_HEADERS_VAR)]
    BadCustomHeader(String),
    /// A `tool_choice` troupe does not send.
    #[error("{var}={0:?} is not a tool choice troupe sends: use auto or required", var = TOOL_CHOICE_VAR)]
    BadToolChoice(String),
}
