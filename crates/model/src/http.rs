//! The transport both clients share: POST a JSON body, read the event stream through a
//! provider-specific assembler, and retry transient failures per the [`RetryPolicy`].

use crate::retry::{classify_status, parse_retry_after, Failure, RetryPolicy};
use crate::sse::{SseEvent, SseParser};
use crate::{ModelError, ModelResponse, StreamEvent};
use futures_util::StreamExt;
use std::time::Duration;
use troupe_protocol::error_chain;

/// How long establishing a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a socket read may wait: the streams' own deadlines (first content, then gaps
/// between chunks) and the whole-response deadline decide sooner; this only catches a
/// connection that hangs where none of them applies.
const READ_TIMEOUT: Duration = MAX_FIRST_CONTENT;
/// The longest wait for the first content of a response, however long the prompt.
const MAX_FIRST_CONTENT: Duration = Duration::from_secs(3600);
/// Prompt tokens a slow local server is allowed per idle deadline before its first token:
/// llama.cpp on a CPU reads 25–50 tokens a second, a 2 000-token step per 90 s is ~22.
const PROMPT_TOKENS_PER_IDLE: u64 = 2_000;
/// What a response asked for whole (`stream: false`) may take beyond its first-content
/// deadline, to be generated.
const WHOLE_GENERATION: Duration = Duration::from_secs(300);

/// The deadline for the first content event of a response to a request of `body_bytes`: the
/// idle deadline, and for a server that reads prompts slowly (`slow_prompt`, a local
/// OpenAI-compatible server) one more idle deadline per [`PROMPT_TOKENS_PER_IDLE`] tokens of
/// prompt, at most [`MAX_FIRST_CONTENT`].
pub(crate) fn first_content_deadline(
    idle: Duration,
    body_bytes: usize,
    slow_prompt: bool,
) -> Duration {
    if !slow_prompt {
        return idle;
    }
    let tokens = (body_bytes as u64).div_ceil(crate::estimate::BYTES_PER_TOKEN);
    let factor = 1.0 + tokens as f64 / PROMPT_TOKENS_PER_IDLE as f64;
    idle.mul_f64(factor).min(MAX_FIRST_CONTENT.max(idle))
}

/// The callback a [`crate::Model`] receives for live events.
pub(crate) type Emit<'a> = &'a mut (dyn FnMut(StreamEvent) + Send);

/// Whether the stream should be read further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading: the event carried part of the response, so the idle deadline restarts.
    Continue,
    /// Keep reading, but the event carried nothing (a `ping`, an event type troupe ignores):
    /// it does not restart the idle deadline, or a server sending only pings would hang us.
    KeepAlive,
    /// The terminal event arrived; the response is complete.
    Done,
}

/// Why an assembler could not make a response from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The stream ended before the response was complete.
    Incomplete(String),
    /// An event could not be understood.
    Malformed(String),
    /// The server cannot stream this request (tools offered; see
    /// [`ModelError::StreamingUnsupported`]): final for this attempt, not retried.
    StreamingUnsupported(String),
    /// The provider reported an error inside the stream.
    Provider {
        /// Error type (`overloaded_error`, …), empty when the provider gave none.
        kind: String,
        /// Error message.
        message: String,
    },
}

/// Turns a provider's event stream into a [`ModelResponse`]; one instance per attempt.
pub(crate) trait Assembler {
    /// Takes one event, emitting live events as pieces arrive.
    fn feed(&mut self, event: &SseEvent, emit: Emit<'_>) -> Result<Flow, Fault>;
    /// Builds the response once the terminal event arrived or the stream ended.
    fn finish(self) -> Result<ModelResponse, Fault>;
    /// Builds the response from a whole (non-streaming) JSON body, emitting its pieces as
    /// live events; only a wire that asks for whole responses implements it.
    fn whole(self, body: &str, emit: Emit<'_>) -> Result<ModelResponse, Fault>
    where
        Self: Sized,
    {
        let _ = emit;
        Err(Fault::Malformed(format!(
            "expected an event stream, got JSON: {}",
            crate::error::error_body_message(body)
        )))
    }
    /// The fault an error status's `message` stands for when it is more than a plain HTTP
    /// error (a server refusing to stream tool calls); `None` classifies it by status.
    fn refusal(&self, message: &str) -> Option<Fault> {
        let _ = message;
        None
    }
}

/// How the response of a call is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// As a server-sent event stream, with the idle deadline.
    Stream,
    /// As one JSON body (`stream: false`); the server sends nothing until it has generated
    /// everything, so only the client's read timeout applies.
    Whole,
}

/// One HTTP call to make, possibly several times.
pub(crate) struct Call {
    /// Full endpoint URL.
    pub url: String,
    /// Extra request headers (content-type is set from the JSON body).
    pub headers: Vec<(&'static str, String)>,
    /// Headers the person configured (`ANTHROPIC_CUSTOM_HEADERS`), after those.
    pub custom_headers: Vec<(String, String)>,
    /// The request body, serialised once; clones share the buffer across attempts.
    pub body: bytes::Bytes,
    /// Environment variable holding the API key, named in authentication errors.
    pub key_var: &'static str,
    /// How long a stream may go without a content event between two of them before the
    /// attempt is abandoned and retried.
    pub idle_timeout: Duration,
    /// How long the first content event may take (the prompt is read before it): at least
    /// `idle_timeout`, see [`first_content_deadline`].
    pub first_content_timeout: Duration,
    /// Whether the response streams or comes whole.
    pub reading: Reading,
}

/// A reqwest client with troupe's timeouts, on rustls with the ring provider, for a server at
/// `base_url`. Only an `https` server needs the system's certificate roots, which rustls's
/// platform verifier reads when the client is built (one file per certificate, ~150 opens): a
/// plain-`http` server (a local one, the fake model) gets a client that loads none.
pub(crate) fn build_client(base_url: &str) -> Result<reqwest::Client, ModelError> {
    install_crypto();
    let builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT);
    let plain = base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let builder = match plain {
        true => builder.tls_certs_only(Vec::new()),
        false => builder,
    };
    builder.build().map_err(|e| ModelError::Client {
        message: error_chain(&e),
    })
}

/// reqwest is built without a bundled crypto provider (`rustls-no-provider`; the MCP client's
/// HTTP transports share this reqwest): rustls takes one process-wide provider, ring.
/// Installing it again is a no-op.
pub(crate) fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Makes the call, retrying transient failures; a fresh assembler comes from `new_assembler`
/// for every attempt. Live events of a failed attempt have already been emitted: the
/// `Retrying` event tells the caller to discard them.
pub(crate) async fn call_with_retries<A: Assembler>(
    http: &reqwest::Client,
    policy: &RetryPolicy,
    call: &Call,
    new_assembler: impl Fn() -> A,
    emit: Emit<'_>,
) -> Result<ModelResponse, ModelError> {
    let max_attempts = policy.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        let outcome =
            attempt_once(http, call, call.body.clone(), new_assembler(), &mut *emit).await;
        let failure = match outcome {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        let (reason, retry_after) = match failure {
            Failure::Fatal(error) => return Err(error),
            Failure::Transient {
                reason,
                retry_after,
            } => (reason, retry_after),
        };
        if attempt >= max_attempts {
            return Err(ModelError::RetriesExhausted {
                url: call.url.clone(),
                attempts: attempt,
                last_error: reason,
            });
        }
        let wait = policy.delay(attempt, retry_after);
        let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        tracing::warn!(url = %call.url, attempt, wait_ms, %reason, "model call failed; retrying");
        emit(StreamEvent::Retrying {
            attempt,
            wait_ms,
            reason,
        });
        tokio::time::sleep(wait).await;
        attempt += 1;
    }
}

/// One attempt: send, check the status, stream the body through the assembler.
async fn attempt_once<A: Assembler>(
    http: &reqwest::Client,
    call: &Call,
    payload: bytes::Bytes,
    mut assembler: A,
    emit: Emit<'_>,
) -> Result<ModelResponse, Failure> {
    let mut request = http
        .post(&call.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(payload);
    for (name, value) in &call.headers {
        request = request.header(*name, value);
    }
    for (name, value) in &call.custom_headers {
        request = request.header(name.as_str(), value);
    }
    // The first content event has its own deadline (the server reads the prompt first); from
    // then on every content event moves the idle deadline on: pings, SSE comments and silence
    // all count as idle.
    let idle = call.idle_timeout;
    let first = call.first_content_timeout.max(idle);
    let started = tokio::time::Instant::now();
    let mut deadline = started + first;
    let mut stall = Stall::FirstContent(first);
    let whole_deadline = started + first + WHOLE_GENERATION;
    let response = match call.reading {
        Reading::Stream => tokio::time::timeout_at(deadline, request.send())
            .await
            .map_err(|_| stall.failure())?,
        Reading::Whole => tokio::time::timeout_at(whole_deadline, request.send())
            .await
            .map_err(|_| whole_failure(first + WHOLE_GENERATION))?,
    }
    .map_err(|e| classify_send_error(&call.url, &e))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = parse_retry_after(response.headers());
        // A body that cannot be read still leaves the status to classify by.
        let body = response.text().await.unwrap_or_default();
        if let Some(refusal) = assembler.refusal(&crate::error::error_body_message(&body)) {
            return Err(fault(call, refusal));
        }
        return Err(classify_status(
            &call.url,
            status.as_u16(),
            retry_after,
            &body,
            call.key_var,
        ));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if call.reading == Reading::Whole && !content_type.starts_with("text/event-stream") {
        let body = tokio::time::timeout_at(whole_deadline, response.text())
            .await
            .map_err(|_| whole_failure(first + WHOLE_GENERATION))?
            .map_err(|e| Failure::Transient {
                reason: format!("the response broke off: {}", error_chain(&e)),
                retry_after: None,
            })?;
        return assembler.whole(&body, emit).map_err(|f| fault(call, f));
    }
    if content_type.starts_with("application/json") {
        // The server ignored `stream: true` or sent an error with a success status.
        let body = response.text().await.unwrap_or_default();
        return Err(Failure::Fatal(ModelError::Decode {
            url: call.url.clone(),
            message: format!(
                "expected an event stream, got JSON: {}",
                crate::error::error_body_message(&body)
            ),
        }));
    }
    let mut parser = SseParser::new();
    let mut body = response.bytes_stream();
    loop {
        let next = tokio::time::timeout_at(deadline, body.next())
            .await
            .map_err(|_| stall.failure())?;
        match next {
            Some(Ok(chunk)) => {
                for event in parser.push(&chunk) {
                    match assembler
                        .feed(&event, &mut *emit)
                        .map_err(|f| fault(call, f))?
                    {
                        Flow::Done => return assembler.finish().map_err(|f| fault(call, f)),
                        Flow::Continue => {
                            deadline = tokio::time::Instant::now() + idle;
                            stall = Stall::BetweenChunks(idle);
                        }
                        Flow::KeepAlive => {}
                    }
                }
            }
            Some(Err(e)) => {
                return Err(Failure::Transient {
                    reason: format!("the response stream broke off: {}", error_chain(&e)),
                    retry_after: None,
                })
            }
            None => {
                if let Some(event) = parser.finish() {
                    assembler
                        .feed(&event, &mut *emit)
                        .map_err(|f| fault(call, f))?;
                }
                return assembler.finish().map_err(|f| fault(call, f));
            }
        }
    }
}

/// Which deadline a stream is under: the first content's, or the idle gap between chunks.
#[derive(Debug, Clone, Copy)]
enum Stall {
    FirstContent(Duration),
    BetweenChunks(Duration),
}

impl Stall {
    /// The transient failure of an attempt that missed this deadline; the reason ends up in
    /// the final error when every attempt stalls.
    fn failure(self) -> Failure {
        let reason = match self {
            Stall::FirstContent(first) => format!(
                "the stream sent no content for {} after the request (first-content deadline: the stream idle deadline, longer for a local server's long prompt; only keep-alives or nothing arrived; {} sets the idle deadline in milliseconds)",
                crate::kind::human_duration(first),
                crate::kind::STREAM_IDLE_VAR,
            ),
            Stall::BetweenChunks(idle) => format!(
                "the stream sent no content for {} between chunks (stream idle deadline; only keep-alives or nothing arrived; {} sets it in milliseconds)",
                crate::kind::human_duration(idle),
                crate::kind::STREAM_IDLE_VAR,
            ),
        };
        Failure::Transient {
            reason,
            retry_after: None,
        }
    }
}

/// The transient failure of a response asked for whole that did not arrive in `limit`.
fn whole_failure(limit: Duration) -> Failure {
    Failure::Transient {
        reason: format!(
            "the whole response did not arrive within {} (first-content deadline plus {} to generate it; {} sets the idle deadline in milliseconds)",
            crate::kind::human_duration(limit),
            crate::kind::human_duration(WHOLE_GENERATION),
            crate::kind::STREAM_IDLE_VAR,
        ),
        retry_after: None,
    }
}

/// Maps an assembler's fault to a retry decision.
fn fault(call: &Call, fault: Fault) -> Failure {
    match fault {
        // Nothing was returned to the caller yet, so a cut stream is simply tried again.
        Fault::Incomplete(reason) => Failure::Transient {
            reason,
            retry_after: None,
        },
        Fault::StreamingUnsupported(reason) => Failure::Fatal(ModelError::StreamingUnsupported {
            url: call.url.clone(),
            reason,
        }),
        Fault::Malformed(message) => Failure::Fatal(ModelError::Stream {
            url: call.url.clone(),
            message,
        }),
        Fault::Provider { kind, message } => {
            crate::retry::classify_stream_error(&call.url, &kind, &message)
        }
    }
}

/// Classifies an error from sending the request. Connection refused fails at once: a server
/// that is not running will not start during a backoff, and a silent retry loop hides that.
fn classify_send_error(url: &str, error: &reqwest::Error) -> Failure {
    if is_connection_refused(error) {
        return Failure::Fatal(ModelError::ConnectionRefused {
            url: url.to_owned(),
        });
    }
    let message = error_chain(error);
    if error.is_timeout() {
        return Failure::Transient {
            reason: format!("timed out: {message}"),
            retry_after: None,
        };
    }
    if error.is_connect() || error.is_builder() {
        return Failure::Fatal(ModelError::Connect {
            url: url.to_owned(),
            message,
        });
    }
    // Resets and other failures while the request was in flight.
    Failure::Transient {
        reason: message,
        retry_after: None,
    }
}

/// True when some cause of the error is an I/O "connection refused".
fn is_connection_refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        source = cause.source();
    }
    false
}

/// Feeds raw SSE bytes, cut into chunks of `chunk` bytes, through an assembler, as the
/// transport would; returns the outcome and the live events.
#[cfg(test)]
pub(crate) fn assemble<A: Assembler>(
    mut assembler: A,
    raw: &[u8],
    chunk: usize,
) -> (Result<ModelResponse, Fault>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let mut emit = |e: StreamEvent| events.push(e);
    let mut parser = SseParser::new();
    let mut pending: Vec<SseEvent> = Vec::new();
    for piece in raw.chunks(chunk.max(1)) {
        pending.extend(parser.push(piece));
    }
    pending.extend(parser.finish());
    for event in &pending {
        match assembler.feed(event, &mut emit) {
            Ok(Flow::Continue | Flow::KeepAlive) => {}
            Ok(Flow::Done) => return (assembler.finish(), events),
            Err(fault) => return (Err(fault), events),
        }
    }
    (assembler.finish(), events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_content_deadline_grows_with_a_slow_servers_prompt() {
        let idle = Duration::from_secs(90);
        // A hosted API: the idle deadline, whatever the prompt.
        assert_eq!(first_content_deadline(idle, 400_000, false), idle);
        // A local server: one more idle deadline per 2 000 prompt tokens (8 000 bytes).
        assert_eq!(first_content_deadline(idle, 0, true), idle);
        assert_eq!(
            first_content_deadline(idle, 28_000, true),
            Duration::from_secs(90 * 9 / 2)
        );
        // Bounded, even for an enormous prompt.
        assert_eq!(
            first_content_deadline(idle, 100_000_000, true),
            MAX_FIRST_CONTENT
        );
    }
}
