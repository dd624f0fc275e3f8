//! The Anthropic Messages API client (streaming).

use crate::anthropic_body::{request_body, EXTENDED_TTL_BETA};
use crate::cache::{CacheTtl, PromptCache};
use crate::endpoint::{Configure, Endpoint};
use crate::http::{call_with_retries, Assembler, Call, Emit, Fault, Flow};
use crate::sse::SseEvent;
use crate::{
    parse_tool_input, Model, ModelError, ModelRequest, ModelResponse, StopReason, StreamEvent,
    AGENT_HEADER,
};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use troupe_protocol::{ContentBlock, Usage};

/// The public Anthropic endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version troupe speaks.
pub const API_VERSION: &str = "2023-06-01";
/// Environment variable the key is read from (named in authentication errors).
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// A streaming client for `POST {base_url}/v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    endpoint: Endpoint,
    bearer: bool,
    /// Sent as both `x-api-key` and `Authorization: Bearer` (an `apiKeyHelper`'s key).
    both: bool,
    /// `ANTHROPIC_CUSTOM_HEADERS`: added to every request.
    custom_headers: Vec<(String, String)>,
    prompt_cache: PromptCache,
}

impl Configure for AnthropicClient {
    fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }
}

impl AnthropicClient {
    /// A client for `base_url` (without `/v1`); no key is allowed for local proxies.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self, ModelError> {
        Ok(AnthropicClient {
            endpoint: Endpoint::new(base_url, api_key)?,
            bearer: false,
            both: false,
            custom_headers: Vec::new(),
            prompt_cache: PromptCache::default(),
        })
    }

    /// The same client with prompt caching set (on by default, 5-minute entries).
    pub fn with_prompt_cache(mut self, cache: PromptCache) -> Self {
        self.prompt_cache = cache;
        self
    }

    /// Sends the key as `Authorization: Bearer` (`ANTHROPIC_AUTH_TOKEN`) instead of
    /// `x-api-key`.
    pub fn with_bearer(mut self, bearer: bool) -> Self {
        self.bearer = bearer;
        self
    }

    /// Sends the key both as `x-api-key` and as `Authorization: Bearer`, as Claude Code sends
    /// an `apiKeyHelper`'s key.
    pub fn with_key_in_both_headers(mut self, both: bool) -> Self {
        self.both = both;
        self
    }

    /// The same client adding `headers` to every request (`ANTHROPIC_CUSTOM_HEADERS`).
    pub fn with_custom_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.custom_headers = headers;
        self
    }

    /// The endpoint this client posts to.
    pub fn url(&self) -> String {
        format!("{}/v1/messages", self.endpoint.base_url)
    }
}

#[async_trait]
impl Model for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
    }

    async fn preconnect(&self) {
        self.endpoint.preconnect().await;
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let body = request_body(
            request,
            &self.endpoint.tools_json,
            self.prompt_cache,
            self.endpoint.reasoning,
        )
        .map_err(|e| ModelError::Client {
            message: format!("could not encode the request: {e}"),
        })?;
        let mut headers = vec![
            ("anthropic-version", API_VERSION.to_owned()),
            ("accept", "text/event-stream".to_owned()),
        ];
        if self.endpoint.agent_header {
            headers.push((AGENT_HEADER, request.agent.clone()));
        }
        let mut betas: Vec<&str> = Vec::new();
        if self.prompt_cache.enabled && self.prompt_cache.ttl == CacheTtl::OneHour {
            betas.push(EXTENDED_TTL_BETA);
        }
        if crate::alias::split_1m(&request.model).1 {
            betas.push(crate::alias::CONTEXT_1M_BETA);
        }
        if !betas.is_empty() {
            headers.push(("anthropic-beta", betas.join(",")));
        }
        match (&self.endpoint.api_key, self.bearer, self.both) {
            (Some(key), _, true) => {
                headers.push(("x-api-key", key.clone()));
                headers.push(("authorization", format!("Bearer {key}")));
            }
            (Some(key), false, false) => headers.push(("x-api-key", key.clone())),
            (Some(token), true, false) => {
                headers.push(("authorization", format!("Bearer {token}")))
            }
            (None, _, _) => {}
        }
        let call = Call {
            url: self.url(),
            headers,
            custom_headers: self.custom_headers.clone(),
            body,
            key_var: KEY_VAR,
            idle_timeout: self.endpoint.idle_timeout,
            // The API answers with message_start at once and pings while it reads the prompt.
            first_content_timeout: self.endpoint.idle_timeout,
            reading: crate::http::Reading::Stream,
        };
        call_with_retries(
            &self.endpoint.http,
            &self.endpoint.retry,
            &call,
            AnthropicAssembler::default,
            on_event,
        )
        .await
    }
}

/// A content block while it streams in.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        /// The `input` of `content_block_start`, used when no JSON deltas follow.
        initial: Value,
        /// Concatenated `input_json_delta` fragments.
        json: String,
    },
}

impl PartialBlock {
    /// The finished block; `None` for empty text, which the API would reject when sent back.
    fn finish(self) -> Option<ContentBlock> {
        match self {
            PartialBlock::Text(text) if text.is_empty() => None,
            PartialBlock::Text(text) => Some(ContentBlock::Text { text }),
            PartialBlock::Thinking {
                thinking,
                signature,
            } => Some(ContentBlock::Thinking {
                thinking,
                signature,
            }),
            PartialBlock::Redacted(data) => Some(ContentBlock::RedactedThinking { data }),
            PartialBlock::ToolUse {
                id,
                name,
                initial,
                json,
            } => {
                let input = if json.trim().is_empty() && initial.is_object() {
                    initial
                } else {
                    parse_tool_input(&json)
                };
                Some(ContentBlock::ToolUse { id, name, input })
            }
        }
    }
}

/// Assembles a response from Anthropic stream events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicAssembler {
    /// Blocks by their `index`, so the response keeps the model's order.
    blocks: BTreeMap<u64, PartialBlock>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    stopped: bool,
}

impl Assembler for AnthropicAssembler {
    fn feed(&mut self, event: &SseEvent, emit: Emit<'_>) -> Result<Flow, Fault> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            Fault::Malformed(format!(
                "event {:?} does not hold JSON ({e}): {}",
                event.event.as_deref().unwrap_or(""),
                event.data
            ))
        })?;
        // The `type` inside the data is authoritative; the SSE event name is a fallback.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    apply_usage(&mut self.usage, usage);
                }
            }
            "content_block_start" => self.start_block(&data, emit)?,
            "content_block_delta" => self.apply_delta(&data, emit)?,
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(stop_reason(reason));
                }
                if let Some(usage) = data.get("usage") {
                    apply_usage(&mut self.usage, usage);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => {
                let text = |pointer: &str| {
                    data.pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                return Err(Fault::Provider {
                    kind: text("/error/type"),
                    message: text("/error/message"),
                });
            }
            // `content_block_stop` needs no work: blocks are finished together at the end.
            "content_block_stop" => {}
            // `ping` and event types added after this was written carry nothing: they keep the
            // connection open but do not count as progress.
            _ => return Ok(Flow::KeepAlive),
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ModelResponse, Fault> {
        if !self.stopped {
            return Err(Fault::Incomplete(
                "the stream ended before message_stop".to_owned(),
            ));
        }
        let content: Vec<ContentBlock> = self
            .blocks
            .into_values()
            .filter_map(PartialBlock::finish)
            .collect();
        let has_tool_use = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = self.stop_reason.unwrap_or(if has_tool_use {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
        })
    }
}

impl AnthropicAssembler {
    fn start_block(&mut self, data: &Value, emit: Emit<'_>) -> Result<(), Fault> {
        let index = block_index(data)?;
        let block = data.get("content_block").unwrap_or(&Value::Null);
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let partial = match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                let initial = text("text");
                if !initial.is_empty() {
                    emit(StreamEvent::TextDelta(initial.clone()));
                }
                PartialBlock::Text(initial)
            }
            "thinking" => PartialBlock::Thinking {
                thinking: text("thinking"),
                signature: block
                    .get("signature")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            },
            "redacted_thinking" => PartialBlock::Redacted(text("data")),
            "tool_use" => {
                let (id, name) = (text("id"), text("name"));
                emit(StreamEvent::ToolUseStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                PartialBlock::ToolUse {
                    id,
                    name,
                    initial: block.get("input").cloned().unwrap_or(Value::Null),
                    json: String::new(),
                }
            }
            other => {
                // Server-side tool blocks and future types have nothing troupe can act on.
                tracing::debug!(block_type = other, "ignoring unknown content block");
                return Ok(());
            }
        };
        self.blocks.insert(index, partial);
        Ok(())
    }

    fn apply_delta(&mut self, data: &Value, emit: Emit<'_>) -> Result<(), Fault> {
        let index = block_index(data)?;
        let delta = data.get("delta").unwrap_or(&Value::Null);
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        let delta_type = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(block) = self.blocks.get_mut(&index) else {
            // Deltas of ignored block types land here too.
            tracing::debug!(index, delta_type, "delta for a block that was not started");
            return Ok(());
        };
        match (delta_type, block) {
            ("text_delta", PartialBlock::Text(text)) => {
                let piece = field("text");
                text.push_str(piece);
                if !piece.is_empty() {
                    emit(StreamEvent::TextDelta(piece.to_owned()));
                }
            }
            ("input_json_delta", PartialBlock::ToolUse { json, .. }) => {
                json.push_str(field("partial_json"));
            }
            ("thinking_delta", PartialBlock::Thinking { thinking, .. }) => {
                let piece = field("thinking");
                thinking.push_str(piece);
                if !piece.is_empty() {
                    emit(StreamEvent::ThinkingDelta(piece.to_owned()));
                }
            }
            ("signature_delta", PartialBlock::Thinking { signature, .. }) => {
                signature
                    .get_or_insert_with(String::new)
                    .push_str(field("signature"));
            }
            (other, _) => {
                return Err(Fault::Malformed(format!(
                    "delta {other:?} does not fit content block {index}"
                )))
            }
        }
        Ok(())
    }
}

/// The `index` of a content block event.
fn block_index(data: &Value) -> Result<u64, Fault> {
    data.get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| Fault::Malformed(format!("content block event without index: {data}")))
}

/// Overwrites the usage counters present in `value` (Anthropic's counts are cumulative).
fn apply_usage(usage: &mut Usage, value: &Value) {
    let fields: [(&str, &mut u64); 4] = [
        ("input_tokens", &mut usage.input_tokens),
        ("output_tokens", &mut usage.output_tokens),
        (
            "cache_read_input_tokens",
            &mut usage.cache_read_input_tokens,
        ),
        (
            "cache_creation_input_tokens",
            &mut usage.cache_creation_input_tokens,
        ),
    ];
    for (key, slot) in fields {
        if let Some(n) = value.get(key).and_then(Value::as_u64) {
            *slot = n;
        }
    }
}

/// Maps Anthropic's `stop_reason`.
fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
