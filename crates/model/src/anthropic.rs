//! The Anthropic Messages API client (streaming).

use crate::body::{object_with, ToolsJson};
use crate::cache::{plan, system_pieces, Breakpoints, CacheTtl, PromptCache};
use crate::http::{build_client, call_with_retries, Assembler, Call, Emit, Fault, Flow};
use crate::retry::RetryPolicy;
use crate::schema::clean_schema;
use crate::sse::SseEvent;
use crate::{
    parse_tool_input, Model, ModelError, ModelRequest, ModelResponse, Provider, StopReason,
    StreamEvent, AGENT_HEADER, DEFAULT_STREAM_IDLE_TIMEOUT,
};
use async_trait::async_trait;
use bytes::Bytes;
use serde::ser::{Error as _, SerializeSeq};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use troupe_protocol::{ChatMessage, ContentBlock, Usage};

/// The public Anthropic endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version troupe speaks.
pub const API_VERSION: &str = "2023-06-01";
/// Environment variable the key is read from (named in authentication errors).
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// A streaming client for `POST {base_url}/v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    bearer: bool,
    retry: RetryPolicy,
    idle_timeout: Duration,
    /// Shared by the client's clones, like its connection pool.
    tools_json: Arc<ToolsJson>,
    prompt_cache: PromptCache,
}

impl AnthropicClient {
    /// A client for `base_url` (without `/v1`); no key is allowed for local proxies.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self, ModelError> {
        Ok(AnthropicClient {
            http: build_client()?,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key,
            bearer: false,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            tools_json: Arc::default(),
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

    /// The same client with another retry policy.
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same client with another stream idle deadline: an attempt that receives no content
    /// event (pings do not count) for this long is abandoned and retried.
    pub fn with_stream_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// The endpoint this client posts to.
    pub fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }
}

#[async_trait]
impl Model for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let body = request_body(request, &self.tools_json, self.prompt_cache).map_err(|e| {
            ModelError::Client {
                message: format!("could not encode the request: {e}"),
            }
        })?;
        let mut headers = vec![
            ("anthropic-version", API_VERSION.to_owned()),
            ("accept", "text/event-stream".to_owned()),
            (AGENT_HEADER, request.agent.clone()),
        ];
        if self.prompt_cache.enabled && self.prompt_cache.ttl == CacheTtl::OneHour {
            headers.push(("anthropic-beta", EXTENDED_TTL_BETA.to_owned()));
        }
        match (&self.api_key, self.bearer) {
            (Some(key), false) => headers.push(("x-api-key", key.clone())),
            (Some(token), true) => headers.push(("authorization", format!("Bearer {token}"))),
            (None, _) => {}
        }
        let call = Call {
            url: self.url(),
            headers,
            body,
            key_var: KEY_VAR,
            idle_timeout: self.idle_timeout,
            reading: crate::http::Reading::Stream,
        };
        call_with_retries(
            &self.http,
            &self.retry,
            &call,
            AnthropicAssembler::default,
            on_event,
        )
        .await
    }
}

/// The beta that 1-hour cache entries were introduced under (harmless where they are GA).
const EXTENDED_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

/// The fields of a Messages request besides `tools`, in the order the API documents them.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Messages<'a>,
    stream: bool,
    #[serde(skip_serializing_if = "System::is_empty")]
    system: System<'a>,
}

/// A breakpoint's `cache_control` object.
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    fn new(ttl: CacheTtl) -> Self {
        CacheControl {
            kind: "ephemeral",
            ttl: match ttl {
                CacheTtl::FiveMinutes => None,
                CacheTtl::OneHour => Some("1h"),
            },
        }
    }
}

/// The system prompt: one string without caching; with it, text blocks cut where the
/// caller's marks are, the marked ones carrying a breakpoint.
enum System<'a> {
    Text(&'a str),
    Blocks(Vec<SystemBlock<'a>>),
}

impl System<'_> {
    fn is_empty(&self) -> bool {
        match self {
            System::Text(text) => text.is_empty(),
            System::Blocks(blocks) => blocks.is_empty(),
        }
    }
}

impl Serialize for System<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            System::Text(text) => s.serialize_str(text),
            System::Blocks(blocks) => blocks.serialize(s),
        }
    }
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// The conversation as the API takes it: each message as it is, except one whose tool results
/// carry images, which goes through [`images_into_blocks`], and one whose last block carries a
/// breakpoint.
struct Messages<'a> {
    messages: &'a [ChatMessage],
    /// Indices of the messages marked, ascending.
    marked: &'a [usize],
    control: CacheControl,
}

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        for (i, message) in self.messages.iter().enumerate() {
            let has_images = message.content.iter().any(
                |b| matches!(b, ContentBlock::ToolResult { images, .. } if !images.is_empty()),
            );
            let marked = self.marked.contains(&i);
            if has_images || marked {
                let mut value = serde_json::to_value(message).map_err(S::Error::custom)?;
                if has_images {
                    images_into_blocks(&mut value);
                }
                if marked {
                    mark_last_block(&mut value, self.control).map_err(S::Error::custom)?;
                }
                seq.serialize_element(&value)?;
            } else {
                seq.serialize_element(message)?;
            }
        }
        seq.end()
    }
}

/// Puts `cache_control` on the last content block of a message.
fn mark_last_block(message: &mut Value, control: CacheControl) -> Result<(), serde_json::Error> {
    if let Some(Value::Object(block)) = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.last_mut())
    {
        block.insert("cache_control".to_owned(), serde_json::to_value(control)?);
    }
    Ok(())
}

/// The JSON body of a streaming Messages request, written once; the tools' part comes from
/// `tools_json` (serialised once per shared tool set).
pub(crate) fn request_body(
    request: &ModelRequest,
    tools_json: &ToolsJson,
    cache: PromptCache,
) -> Result<Bytes, serde_json::Error> {
    let tools = match request.tools.is_empty() {
        true => None,
        false => Some(tools_array(request, tools_json)?),
    };
    let caching = cache.enabled && request.cache.is_some();
    let breakpoints = match caching {
        true => plan(
            request,
            tools
                .as_ref()
                .map_or(0, |t| t.len() as u64)
                .div_ceil(crate::estimate::BYTES_PER_TOKEN),
        ),
        false => Breakpoints::default(),
    };
    let control = CacheControl::new(cache.ttl);
    let system = match (caching, request.cache) {
        (true, Some(marks)) => System::Blocks(
            system_pieces(&request.system, &marks)
                .into_iter()
                .enumerate()
                .map(|(i, (start, end))| SystemBlock {
                    kind: "text",
                    text: &request.system[start..end],
                    cache_control: breakpoints.system.contains(&i).then_some(control),
                })
                .collect(),
        ),
        _ => System::Text(&request.system),
    };
    let head = Head {
        model: &request.model,
        max_tokens: request.max_tokens,
        messages: Messages {
            messages: &request.messages,
            marked: &breakpoints.messages,
            control,
        },
        stream: true,
        system,
    };
    match tools {
        None => object_with(&head, &[]),
        Some(tools) => object_with(&head, &[("tools", &tools)]),
    }
}

/// The `tools` array of a request, serialised once per shared tool set.
fn tools_array(request: &ModelRequest, tools_json: &ToolsJson) -> Result<Bytes, serde_json::Error> {
    tools_json.get(&request.tools, |tools| {
        let tools: Vec<Value> = tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": clean_schema(&tool.input_schema, Provider::Anthropic),
                })
            })
            .collect();
        serde_json::to_vec(&tools)
    })
}

/// Rewrites each tool_result that carries images (troupe's `images` list) into the block-array
/// form the API takes: its text first, then one image block per image.
fn images_into_blocks(message: &mut Value) {
    let Some(Value::Array(blocks)) = message.get_mut("content") else {
        return;
    };
    for block in blocks {
        let Some(map) = block.as_object_mut() else {
            continue;
        };
        let Some(Value::Array(images)) = map.remove("images") else {
            continue;
        };
        let text = map
            .remove("content")
            .unwrap_or(Value::String(String::new()));
        let mut content = Vec::with_capacity(images.len() + 1);
        if text.as_str().is_some_and(|t| !t.is_empty()) {
            content.push(json!({"type": "text", "text": text}));
        }
        for image in images {
            content.push(json!({
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": image.get("media_type").cloned().unwrap_or(Value::Null),
                    "data": image.get("data").cloned().unwrap_or(Value::Null),
                },
            }));
        }
        map.insert("content".to_owned(), Value::Array(content));
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
