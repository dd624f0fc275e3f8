//! Which failures are transient; how long to wait before the next try is troupe's one
//! [`RetryPolicy`].

use crate::error::{error_body_message, mentions_image, mentions_prompt_too_long};
use crate::ModelError;
use reqwest::header::HeaderMap;
use std::time::Duration;

/// How often and how patiently a client retries transient failures: troupe's one retry policy.
pub use troupe_protocol::RetryPolicy;

/// The outcome of one failed attempt.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth trying again, after `retry_after` if the server said so.
    Transient {
        /// What went wrong, for the `Retrying` event and the final error.
        reason: String,
        /// The server's requested wait.
        retry_after: Option<Duration>,
    },
    /// Final: retrying would not help.
    Fatal(ModelError),
}

/// The server's requested wait: `retry-after-ms` (milliseconds) or `retry-after` (seconds).
/// An HTTP-date `Retry-After` is ignored in favour of normal backoff.
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// Classifies a non-success HTTP response.
pub(crate) fn classify_status(
    url: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    key_var: &str,
) -> Failure {
    let message = error_body_message(body);
    match status {
        401 | 403 => Failure::Fatal(ModelError::Auth {
            url: url.to_owned(),
            status,
            message,
            key_var: key_var.to_owned(),
        }),
        // 408 timeout, 429 rate limit, 5xx server trouble, 529 Anthropic overloaded.
        408 | 429 | 500..=504 | 529 => Failure::Transient {
            reason: format!("HTTP {status}: {message}"),
            retry_after,
        },
        _ if mentions_prompt_too_long(body) => {
            Failure::Fatal(ModelError::PromptTooLong { message })
        }
        400 | 413 | 415 | 422 if mentions_image(&message) => {
            Failure::Fatal(ModelError::ImageRefused {
                url: url.to_owned(),
                status,
                message,
            })
        }
        _ => Failure::Fatal(ModelError::Http {
            url: url.to_owned(),
            status,
            message,
        }),
    }
}

/// Classifies an error the provider reported inside a stream (Anthropic's `error` event, an
/// OpenAI chunk with an `error` object).
pub(crate) fn classify_stream_error(url: &str, kind: &str, message: &str) -> Failure {
    const TRANSIENT_KINDS: [&str; 5] = [
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "server_error",
        "timeout_error",
    ];
    if TRANSIENT_KINDS.contains(&kind) {
        return Failure::Transient {
            reason: format!("{kind}: {message}"),
            retry_after: None,
        };
    }
    if mentions_prompt_too_long(message) || kind == "context_length_exceeded" {
        return Failure::Fatal(ModelError::PromptTooLong {
            message: message.to_owned(),
        });
    }
    let kind = if kind.is_empty() { "error" } else { kind };
    Failure::Fatal(ModelError::Stream {
        url: url.to_owned(),
        message: format!("the provider reported {kind}: {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }

    #[test]
    fn retry_after_is_honoured_but_clamped() {
        let p = policy();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(parse_retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(
            parse_retry_after(&headers),
            Some(Duration::from_millis(1500))
        );
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&date), None);
    }

    fn is_transient(f: &Failure) -> bool {
        matches!(f, Failure::Transient { .. })
    }

    #[test]
    fn classifies_statuses() {
        let url = "http://x/v1/messages";
        for status in [408, 429, 500, 502, 503, 504, 529] {
            assert!(
                is_transient(&classify_status(url, status, None, "", "K")),
                "{status}"
            );
        }
        assert!(matches!(
            classify_status(url, 401, None, r#"{"error":{"message":"no"}}"#, "ANTHROPIC_API_KEY"),
            Failure::Fatal(ModelError::Auth { status: 401, ref key_var, .. }) if key_var == "ANTHROPIC_API_KEY"
        ));
        assert!(matches!(
            classify_status(url, 403, None, "", "K"),
            Failure::Fatal(ModelError::Auth { .. })
        ));
        assert!(matches!(
            classify_status(url, 404, None, "not found", "K"),
            Failure::Fatal(ModelError::Http { status: 404, .. })
        ));
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_status(url, 400, None, too_long, "K"),
            Failure::Fatal(ModelError::PromptTooLong { ref message }) if message.starts_with("prompt is too long")
        ));
        let openai_too_long = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_status(url, 400, None, openai_too_long, "K"),
            Failure::Fatal(ModelError::PromptTooLong { .. })
        ));
        assert!(matches!(
            classify_status(url, 400, None, "bad", "K"),
            Failure::Fatal(ModelError::Http { status: 400, .. })
        ));
        let no_vision = r#"{"error":{"message":"image input is not supported by this model"}}"#;
        let Failure::Fatal(refused) = classify_status(url, 400, None, no_vision, "K") else {
            panic!("an image refusal is final");
        };
        assert!(matches!(
            refused,
            ModelError::ImageRefused { status: 400, .. }
        ));
        let said = refused.to_string();
        assert!(
            said.contains("refused an image") && said.contains("not supported by this model"),
            "{said}"
        );
    }

    #[test]
    fn transient_status_keeps_the_servers_wait() {
        let failure = classify_status("u", 429, Some(Duration::from_secs(2)), "slow down", "K");
        match failure {
            Failure::Transient {
                reason,
                retry_after,
            } => {
                assert_eq!(retry_after, Some(Duration::from_secs(2)));
                assert!(reason.contains("429") && reason.contains("slow down"));
            }
            Failure::Fatal(e) => panic!("expected transient, got {e}"),
        }
    }

    #[test]
    fn classifies_stream_errors() {
        assert!(is_transient(&classify_stream_error(
            "u",
            "overloaded_error",
            "Overloaded"
        )));
        assert!(matches!(
            classify_stream_error("u", "invalid_request_error", "prompt is too long: 5 > 4"),
            Failure::Fatal(ModelError::PromptTooLong { .. })
        ));
        assert!(matches!(
            classify_stream_error("u", "invalid_request_error", "nope"),
            Failure::Fatal(ModelError::Stream { ref message, .. }) if message.contains("invalid_request_error") && message.contains("nope")
        ));
    }
}
