//! Errors a model call can end with, worded so the CLI can print them as they are.

use crate::kind::ConfigError;
use thiserror::Error;

/// Why a model call failed (after any retries).
#[derive(Debug, Error)]
pub enum ModelError {
    /// The server rejected the request with a status that retrying cannot fix.
    #[error("{url} answered HTTP {status}: {message}")]
    Http {
        /// Endpoint called.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The provider's error message (or the start of the body).
        message: String,
    },
    /// The server refused the credentials (401/403).
    #[error(
        "{url} refused the credentials (HTTP {status}): {message}; check that {key_var} holds a valid API key"
    )]
    Auth {
        /// Endpoint called.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The provider's error message.
        message: String,
        /// The environment variable the key comes from.
        key_var: String,
    },
    /// The conversation no longer fits the model's context window; compact and try again.
    #[error("the prompt is too long for the model's context window: {message}")]
    PromptTooLong {
        /// The provider's error message.
        message: String,
    },
    /// The server refused an image in the conversation (a model without vision, an image too
    /// large or of a kind it does not take).
    #[error(
        "{url} refused an image in the conversation (HTTP {status}): {message}. The model may not \
         take images, or not this one; use a model that does (--model, /model), or leave the \
         image out (an @image mention, a pasted image path, an image read with read_file; in the \
         REPL /rewind or /clear drops it from the conversation)"
    )]
    ImageRefused {
        /// Endpoint called.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The provider's error message.
        message: String,
    },
    /// Every attempt failed transiently.
    #[error("{url} kept failing after {attempts} attempts; last error: {last_error}")]
    RetriesExhausted {
        /// Endpoint called.
        url: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last transient failure (status or network error).
        last_error: String,
    },
    /// Nothing listens at the address: failed at once, without retrying.
    #[error("connection refused by {url}: is the server running?")]
    ConnectionRefused {
        /// Endpoint called.
        url: String,
    },
    /// The server could not be reached (bad URL, DNS failure, TLS failure).
    #[error("could not reach {url}: {message}")]
    Connect {
        /// Endpoint called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The event stream held something that cannot be understood, or a non-retriable
    /// error reported inside the stream.
    #[error("bad response stream from {url}: {message}")]
    Stream {
        /// Endpoint called.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// A successful response whose body is not an event stream.
    #[error("could not decode the response from {url}: {message}")]
    Decode {
        /// Endpoint called.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The server cannot stream this request: it closed an empty or unfinished stream on a
    /// request offering tools, or said streaming with tools is unsupported (llama.cpp's
    /// server). The OpenAI-compatible client answers it by asking again without streaming.
    #[error("{url} cannot stream a request with tools: {reason}")]
    StreamingUnsupported {
        /// Endpoint called.
        url: String,
        /// What the server did.
        reason: String,
    },
    /// The HTTP client could not be set up.
    #[error("could not set up the HTTP client: {message}")]
    Client {
        /// What went wrong.
        message: String,
    },
    /// The provider configuration is incomplete or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl ModelError {
    /// True when the caller should compact the conversation and call again.
    pub fn is_prompt_too_long(&self) -> bool {
        matches!(self, ModelError::PromptTooLong { .. })
    }

    /// For a prompt-too-long error, the sizes the provider stated: (tokens sent, the window),
    /// each when its wording says it (Anthropic: `… 250000 tokens > 200000 maximum`; OpenAI:
    /// `maximum context length is 200000 tokens. However, your messages resulted in 250000
    /// tokens`). Lets a caller learn the real window of a model it did not know.
    pub fn prompt_sizes(&self) -> Option<PromptSizes> {
        match self {
            ModelError::PromptTooLong { message } => Some(PromptSizes::parse(message)),
            _ => None,
        }
    }
}

/// The sizes a prompt-too-long error states, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptSizes {
    /// How many tokens the rejected prompt had.
    pub tokens: Option<u64>,
    /// The model's context window.
    pub limit: Option<u64>,
}

impl PromptSizes {
    /// Reads the sizes out of a provider's message; what it does not state stays `None`.
    pub fn parse(message: &str) -> PromptSizes {
        let lower = message.to_lowercase();
        let number_after = |needle: &str| -> Option<u64> {
            let at = lower.find(needle)? + needle.len();
            let digits: String = lower[at..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        };
        let mut sizes = PromptSizes {
            tokens: number_after("prompt is too long:"),
            limit: number_after("tokens >"),
        };
        if sizes.limit.is_none() {
            sizes.limit = number_after("maximum context length is");
        }
        if sizes.tokens.is_none() {
            sizes.tokens = number_after("resulted in");
        }
        sizes
    }
}

/// True when an error message says the prompt exceeds the context window, in the wording of
/// Anthropic, OpenAI, vLLM or llama.cpp.
pub(crate) fn mentions_prompt_too_long(message: &str) -> bool {
    const NEEDLES: [&str; 5] = [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "exceeds the available context size",
        "exceed_context_size",
    ];
    let lower = message.to_lowercase();
    NEEDLES.iter().any(|needle| lower.contains(needle))
}

/// Whether a refusal's message is about an image (`image_url` not supported, image too large,
/// invalid image).
pub(crate) fn mentions_image(message: &str) -> bool {
    message.to_lowercase().contains("image")
}

/// The human-readable message of a provider error body (`{"error":{"message":…}}` in both
/// wire formats), or the start of the raw body when it is not JSON.
pub(crate) fn error_body_message(body: &str) -> String {
    const MAX_CHARS: usize = 500;
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            value.pointer("/error/message"),
            value.get("message"),
            value.get("error"),
            value.get("detail"),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(text) = candidate.as_str() {
                return text.to_owned();
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_owned();
    }
    trimmed.chars().take(MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_prompt_too_long_wordings() {
        assert!(mentions_prompt_too_long(
            "prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(mentions_prompt_too_long(
            "This model's maximum context length is 8192 tokens. However, you requested 9000"
        ));
        assert!(mentions_prompt_too_long(
            r#"{"error":{"code":"context_length_exceeded"}}"#
        ));
        assert!(mentions_prompt_too_long(
            "the request exceeds the available context size, try increasing it"
        ));
        assert!(!mentions_prompt_too_long("max_tokens: must be positive"));
    }

    #[test]
    fn reads_the_sizes_both_wires_state() {
        let anthropic = PromptSizes::parse("prompt is too long: 250000 tokens > 200000 maximum");
        assert_eq!(anthropic.tokens, Some(250_000));
        assert_eq!(anthropic.limit, Some(200_000));
        let openai = PromptSizes::parse(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9,000 tokens.",
        );
        assert_eq!(openai.limit, Some(8192));
        assert_eq!(openai.tokens, Some(9000));
        assert_eq!(
            PromptSizes::parse("the request exceeds the available context size"),
            PromptSizes::default()
        );
        let err = ModelError::PromptTooLong {
            message: "prompt is too long: 5 tokens > 4 maximum".into(),
        };
        assert_eq!(err.prompt_sizes().and_then(|s| s.limit), Some(4));
    }

    #[test]
    fn extracts_messages_from_both_error_shapes() {
        let anthropic =
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}"#;
        assert_eq!(error_body_message(anthropic), "bad model");
        let openai = r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#;
        assert_eq!(error_body_message(openai), "Incorrect API key");
        let ollama = r#"{"error":"model not found"}"#;
        assert_eq!(error_body_message(ollama), "model not found");
        assert_eq!(error_body_message("  Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_body_message(""), "(empty body)");
        assert_eq!(error_body_message(&"x".repeat(2000)).len(), 500);
    }

    #[test]
    fn auth_error_names_the_key_variable() {
        let err = ModelError::Auth {
            url: "http://h/v1/messages".into(),
            status: 401,
            message: "invalid x-api-key".into(),
            key_var: "ANTHROPIC_API_KEY".into(),
        };
        let text = err.to_string();
        assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
        assert!(text.contains("401"), "{text}");
    }

    #[test]
    fn connection_refused_asks_whether_the_server_runs() {
        let err = ModelError::ConnectionRefused {
            url: "http://127.0.0.1:9/chat/completions".into(),
        };
        assert!(err.to_string().contains("is the server running?"));
    }
}
