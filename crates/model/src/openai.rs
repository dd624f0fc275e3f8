//! The OpenAI-compatible Chat Completions client (streaming), for OpenAI itself and local
//! servers such as Ollama, vLLM, llama.cpp and LM Studio.

use crate::body::{object_with, ToolsJson};
use crate::endpoint::{Configure, Endpoint};
use crate::http::{
    call_with_retries, first_content_deadline, Assembler, Call, Emit, Fault, Flow, Reading,
};
use crate::sse::SseEvent;
use crate::tool_choice::ToolChoice;
use crate::{
    parse_tool_input, Model, ModelError, ModelRequest, ModelResponse, StopReason, StreamEvent,
    AGENT_HEADER,
};
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_protocol::{ChatMessage, ContentBlock, ImageData, Role, Usage};

/// The public OpenAI endpoint (with `/v1`).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Environment variable the key is read from (named in authentication errors).
pub const KEY_VAR: &str = "OPENAI_API_KEY";

/// A streaming client for `POST {base_url}/chat/completions`. A server that cannot stream
/// tool calls (llama.cpp's) is asked without streaming for every request with tools once it
/// showed it; clones share that knowledge.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    endpoint: Endpoint,
    /// Set once the server failed to stream a request with tools: such requests then go
    /// non-streaming at once.
    whole_with_tools: Arc<AtomicBool>,
    /// Whether requests name their cache (`prompt_cache_key`): only OpenAI's own endpoint
    /// with prompt caching on.
    cache_key: bool,
    /// The `tool_choice` of requests with tools.
    tool_choice: ToolChoice,
}

impl Configure for OpenAiClient {
    fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }
}

impl OpenAiClient {
    /// A client for `base_url` (including `/v1`); local servers need no key.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self, ModelError> {
        Ok(OpenAiClient {
            endpoint: Endpoint::new(base_url, api_key)?,
            whole_with_tools: Arc::new(AtomicBool::new(false)),
            cache_key: false,
            tool_choice: ToolChoice::default(),
        })
    }

    /// The same client sending `tool_choice` with tools ([`crate::tool_choice::TOOL_CHOICE_VAR`]).
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }

    /// The same client with prompt caching set: on OpenAI's own endpoint each request then
    /// names its cache (`prompt_cache_key`, a hash of the tools and the shared part of the
    /// system prompt), so agents of one tool set land on the same cache. OpenAI caches
    /// prefixes by itself; other servers get nothing they might refuse.
    pub fn with_prompt_cache(mut self, cache: crate::PromptCache) -> Self {
        self.cache_key = cache.enabled && is_openai(&self.endpoint.base_url);
        self
    }

    /// The endpoint this client posts to.
    pub fn url(&self) -> String {
        format!("{}/chat/completions", self.endpoint.base_url)
    }
}

#[async_trait]
impl Model for OpenAiClient {
    fn provider(&self) -> &str {
        "openai"
    }

    async fn preconnect(&self) {
        self.endpoint.preconnect().await;
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let tools = !request.tools.is_empty();
        let reading = if tools && self.whole_with_tools.load(Ordering::Relaxed) {
            Reading::Whole
        } else {
            Reading::Stream
        };
        let result = match self.call(request, reading, on_event).await {
            Err(ModelError::StreamingUnsupported { url, reason }) => {
                if !self.whole_with_tools.swap(true, Ordering::Relaxed) {
                    tracing::warn!(%url, %reason, "the server cannot stream tool calls; asking without streaming from now on");
                    on_event(StreamEvent::Notice(format!(
                        "{url} cannot stream tool calls ({reason}); troupe asks it without streaming for the rest of this session"
                    )));
                }
                self.call(request, Reading::Whole, on_event).await
            }
            other => other,
        };
        result.map(|mut response| {
            // A server that counts nothing (llama.cpp's streams) still gets a usage, marked.
            if response.usage.total() == 0 {
                response.usage = crate::estimate::estimated_usage(request, &response);
            }
            response
        })
    }
}

impl OpenAiClient {
    /// One call with its retries, its response read as `reading` says.
    async fn call(
        &self,
        request: &ModelRequest,
        reading: Reading,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let body = request_body(
            request,
            reading,
            &self.endpoint.tools_json,
            self.cache_key,
            self.endpoint.reasoning.openai_effort(),
            self.tool_choice,
        )
        .map_err(|e| ModelError::Client {
            message: format!("could not encode the request: {e}"),
        })?;
        let accept = match reading {
            Reading::Stream => "text/event-stream",
            Reading::Whole => "application/json",
        };
        let mut headers = vec![("accept", accept.to_owned())];
        if self.endpoint.agent_header {
            headers.push((AGENT_HEADER, request.agent.clone()));
        }
        if let Some(key) = &self.endpoint.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        // A local server reads the whole prompt before its first token, slowly on a CPU.
        let first_content_timeout = first_content_deadline(
            self.endpoint.idle_timeout,
            body.len(),
            !is_openai(&self.endpoint.base_url),
        );
        let call = Call {
            url: self.url(),
            headers,
            custom_headers: Vec::new(),
            body,
            key_var: KEY_VAR,
            idle_timeout: self.endpoint.idle_timeout,
            first_content_timeout,
            reading,
        };
        call_with_retries(
            &self.endpoint.http,
            &self.endpoint.retry,
            &call,
            // Asked without streaming, an unfinished answer is only a transient failure.
            || match reading {
                Reading::Stream => OpenAiAssembler::for_request(request),
                Reading::Whole => OpenAiAssembler::new(),
            },
            on_event,
        )
        .await
    }
}

/// The JSON body of a Chat Completions request, streaming or not; the tools' part comes from
/// `tools_json` (serialised once per shared tool set).
pub(crate) fn request_body(
    request: &ModelRequest,
    reading: Reading,
    tools_json: &ToolsJson,
    cache_key: bool,
    reasoning_effort: Option<&str>,
    tool_choice: ToolChoice,
) -> Result<Bytes, serde_json::Error> {
    let mut head = json!({
        "model": crate::alias::wire_name(&request.model),
        "messages": map_messages(&request.system, &request.messages),
        "max_tokens": request.max_tokens,
    });
    if let Some(effort) = reasoning_effort {
        head["reasoning_effort"] = json!(effort);
    }
    match reading {
        Reading::Stream => {
            head["stream"] = json!(true);
            head["stream_options"] = json!({"include_usage": true});
        }
        // `stream_options` is refused without streaming.
        Reading::Whole => head["stream"] = json!(false),
    }
    if request.tools.is_empty() {
        if let (true, Some(marks)) = (cache_key, request.cache) {
            head["prompt_cache_key"] = json!(prompt_cache_key(b"", &request.system, marks));
        }
        return object_with(&head, &[]);
    }
    let tools = tools_json.get(&request.tools, |tools| {
        crate::input_schema::tools_array(
            tools,
            r#"{"type":"function","function":{"#,
            "parameters",
            "}}",
        )
    })?;
    if let (true, Some(marks)) = (cache_key, request.cache) {
        head["prompt_cache_key"] = json!(prompt_cache_key(&tools, &request.system, marks));
    }
    // Servers that build the prompt from a template (llama.cpp's) leave the tools out of it
    // without a `tool_choice`.
    object_with(
        &head,
        &[("tools", &tools), ("tool_choice", tool_choice.json())],
    )
}

/// True for OpenAI's own endpoint (the only one `prompt_cache_key` is sent to).
fn is_openai(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// The cache a request names: a hash (FNV-1a, stable across runs) of its tools and the part
/// of its system prompt agents share, so every agent of one tool set names the same one.
fn prompt_cache_key(tools: &[u8], system: &str, marks: crate::CacheMarks) -> String {
    let shared = system
        .get(..marks.shared_end.min(system.len()))
        .unwrap_or("");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in tools.iter().chain(shared.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("troupe-{hash:016x}")
}

/// A tool call while its fragments stream in.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
    announced: bool,
}

/// Assembles a response from Chat Completions chunks.
#[derive(Debug)]
pub(crate) struct OpenAiAssembler {
    text: String,
    /// Tool calls by their `index`: fragments after the first often carry nothing else.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
    /// Makes generated call ids unique across responses.
    id_prefix: String,
    /// The request offered tools: an empty or unfinished stream, or a refusal to stream,
    /// means the server cannot stream tool calls.
    tools_offered: bool,
}

impl OpenAiAssembler {
    /// An empty assembler, for a request without tools.
    pub(crate) fn new() -> Self {
        OpenAiAssembler {
            text: String::new(),
            calls: BTreeMap::new(),
            finish_reason: None,
            usage: Usage::default(),
            done: false,
            id_prefix: format!("call_{:08x}", fastrand::u32(..)),
            tools_offered: false,
        }
    }

    /// An empty assembler for the response to `request`.
    pub(crate) fn for_request(request: &ModelRequest) -> Self {
        let mut assembler = OpenAiAssembler::new();
        assembler.tools_offered = !request.tools.is_empty();
        assembler
    }

    fn apply_tool_call(&mut self, fragment: &Value, position: usize, emit: Emit<'_>) {
        let str_field = |pointer: &str| {
            fragment
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let id = str_field("/id");
        // A missing index is a server quirk; fall back to the fragment's place in the array,
        // or to the last call when a fragment without id continues it.
        let index = fragment
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| match (id, self.calls.keys().next_back()) {
                (None, Some(&last)) => last,
                _ => position as u64,
            });
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = id.map(str::to_owned);
        }
        if let Some(name) = str_field("/function/name") {
            if call.name.is_empty() {
                call.name = name.to_owned();
            }
        }
        match fragment.pointer("/function/arguments") {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // Some servers send the arguments as an object instead of JSON text.
            Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
            _ => {}
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            let id = call
                .id
                .get_or_insert_with(|| format!("{}_{index}", self.id_prefix))
                .clone();
            emit(StreamEvent::ToolUseStart {
                id,
                name: call.name.clone(),
            });
        }
    }
}

impl Assembler for OpenAiAssembler {
    fn feed(&mut self, event: &SseEvent, emit: Emit<'_>) -> Result<Flow, Fault> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::KeepAlive);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| Fault::Malformed(format!("chunk is not JSON ({e}): {data}")))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("");
            let kind = [text("type"), text("code")]
                .into_iter()
                .find(|k| !k.is_empty())
                .unwrap_or("");
            let message = error.as_str().unwrap_or_else(|| text("message"));
            if let Some(refusal) = self.refusal(message) {
                return Err(refusal);
            }
            return Err(Fault::Provider {
                kind: kind.to_owned(),
                message: message.to_owned(),
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = parse_usage(usage);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // Only the first choice is requested; others (n > 1) are ignored.
        let Some(choice) = choices.and_then(|c| c.first()) else {
            return Ok(Flow::Continue);
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            if !piece.is_empty() {
                self.text.push_str(piece);
                emit(StreamEvent::TextDelta(piece.to_owned()));
            }
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(piece) = delta.get(key).and_then(Value::as_str) {
                if !piece.is_empty() {
                    emit(StreamEvent::ThinkingDelta(piece.to_owned()));
                }
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, fragment) in calls.iter().enumerate() {
                self.apply_tool_call(fragment, position, &mut *emit);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ModelResponse, Fault> {
        let nothing = self.text.is_empty() && self.calls.is_empty();
        if self.tools_offered && self.finish_reason.is_none() && (!self.done || nothing) {
            // llama.cpp's server closes such a stream when asked to stream tool calls.
            return Err(Fault::StreamingUnsupported(if nothing {
                "it closed the stream without sending anything".to_owned()
            } else {
                "it closed the stream without finish_reason".to_owned()
            }));
        }
        // Some servers close without `[DONE]`; a finish_reason shows the answer is whole.
        if !self.done && self.finish_reason.is_none() {
            return Err(Fault::Incomplete(
                "the stream ended without finish_reason or [DONE]".to_owned(),
            ));
        }
        let has_tool_use = !self.calls.is_empty();
        let mut content = Vec::with_capacity(self.calls.len() + 1);
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        for (index, call) in self.calls {
            let id = call
                .id
                .unwrap_or_else(|| format!("{}_{index}", self.id_prefix));
            content.push(ContentBlock::ToolUse {
                id,
                name: call.name,
                input: parse_tool_input(&call.arguments),
            });
        }
        let stop_reason = match self.finish_reason.as_deref() {
            Some("stop") => StopReason::EndTurn,
            Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
            None if has_tool_use => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
        })
    }

    fn whole(self, body: &str, emit: Emit<'_>) -> Result<ModelResponse, Fault> {
        self.whole_response(body, emit)
    }

    fn refusal(&self, message: &str) -> Option<Fault> {
        (self.tools_offered && refuses_streamed_tools(message))
            .then(|| Fault::StreamingUnsupported(format!("it answered: {message}")))
    }
}

/// True when an error message says streaming is not supported with tools (llama.cpp: "Cannot
/// use tools with stream"; others: "streaming is not supported with tools", …).
fn refuses_streamed_tools(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.contains("stream") && (lower.contains("tool") || lower.contains("function"))
}

#[path = "openai_messages.rs"]
mod messages;
pub(crate) use messages::map_messages;

#[path = "openai_whole.rs"]
mod whole;
use whole::parse_usage;

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
