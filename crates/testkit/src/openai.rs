//! Renders replies, faults and errors in the OpenAI Chat Completions wire format.

use serde_json::{json, Value};
use troupe_protocol::Usage;

use crate::answer::{Answer, SseWriter};
use crate::recorded::Recorded;
use crate::render::{pieces, Ids};
use crate::script::{Fault, Reply, ReplyBlock, StopReason};

/// A fixed creation time keeps the output deterministic.
const CREATED: u64 = 1_700_000_000;

fn finish_name(s: StopReason) -> &'static str {
    match s {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
    }
}

/// The OpenAI error object (Chat Completions and Responses alike), with the `type` and `code`
/// usual for `status`.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        503 => ("server_error", json!("overloaded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// An error answer with the error type usual for `status`.
pub(crate) fn error(status: u16, message: &str) -> Answer {
    Answer::json(status, &error_body(status, message))
}

/// OpenAI's refusal of a prompt larger than the context window (HTTP 400,
/// `context_length_exceeded`).
pub(crate) fn too_long(tokens: u64, limit: u64) -> Answer {
    Answer::json(
        400,
        &json!({"error": {
            "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
        }}),
    )
}

/// OpenAI counts cached prompt tokens inside `prompt_tokens`; it has no cache-write notion.
fn usage_json(u: &Usage) -> Value {
    let prompt = u.input_tokens + u.cache_read_input_tokens;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
    })
}

fn include_usage(rec: &Recorded) -> bool {
    rec.body
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Writes `chat.completion.chunk` objects for one completion.
struct ChunkWriter {
    w: SseWriter,
    id: String,
    model: String,
    with_usage: bool,
}

impl ChunkWriter {
    fn new(rec: &Recorded, ids: &Ids) -> ChunkWriter {
        ChunkWriter {
            w: SseWriter::default(),
            id: format!("chatcmpl-fake-{}", ids.next()),
            model: rec.model(),
            with_usage: include_usage(rec),
        }
    }

    fn chunk(&mut self, delta: Value, finish: Option<&str>) {
        let mut c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": CREATED,
            "model": self.model, "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        // With include_usage the real API puts `usage: null` on every chunk but the last.
        if self.with_usage {
            c["usage"] = Value::Null;
        }
        self.w.data(&c);
    }
}

/// The reply as a chunk stream, or as one completion object when streaming was not asked.
pub(crate) fn reply(
    rec: &Recorded,
    reply: &Reply,
    ids: &Ids,
    (request_bytes, cached): (usize, crate::cache::CacheUse),
) -> Answer {
    let usage = reply.usage_with_cache(request_bytes, cached);
    let finish = finish_name(reply.stop_reason());
    let mut thinking = String::new();
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in &reply.blocks {
        match b {
            ReplyBlock::Thinking(t) => thinking.push_str(t),
            ReplyBlock::RedactedThinking(_) => {}
            ReplyBlock::Text(t) => text.push_str(t),
            ReplyBlock::Tool { name, input } => {
                calls.push((format!("call_{}", ids.next()), name, input))
            }
        }
    }
    let answer = if rec.is_stream() {
        let mut cw = ChunkWriter::new(rec, ids);
        cw.chunk(json!({"role": "assistant", "content": ""}), None);
        for p in pieces(&thinking, 2) {
            cw.chunk(json!({"reasoning_content": p}), None);
        }
        for p in pieces(&text, 3) {
            cw.chunk(json!({"content": p}), None);
        }
        for (index, (id, name, input)) in calls.iter().enumerate() {
            // Only the first fragment names the call; the arguments string follows in pieces.
            cw.chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            );
            for p in pieces(&input.to_string(), 4) {
                cw.chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                    None,
                );
            }
        }
        cw.chunk(json!({}), Some(finish));
        if cw.with_usage {
            let last = json!({
                "id": cw.id, "object": "chat.completion.chunk", "created": CREATED,
                "model": cw.model, "system_fingerprint": null, "choices": [],
                "usage": usage_json(&usage),
            });
            cw.w.data(&last);
        }
        cw.w.raw("data: [DONE]\n\n".to_string());
        Answer::sse(cw.w.finish())
    } else {
        let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
        if !thinking.is_empty() {
            message["reasoning_content"] = json!(thinking);
        }
        if !calls.is_empty() {
            message["tool_calls"] = calls
                .iter()
                .map(|(id, name, input)| {
                    json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}})
                })
                .collect();
        }
        Answer::json(
            200,
            &json!({
                "id": format!("chatcmpl-fake-{}", ids.next()), "object": "chat.completion",
                "created": CREATED, "model": rec.model(),
                "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
                "usage": usage_json(&usage),
            }),
        )
    };
    answer.with_header("x-request-id", format!("req_fake_{}", ids.next()))
}

/// The opening of a stream that is about to go wrong: the role chunk and one content piece.
fn broken_stream_start(rec: &Recorded, ids: &Ids) -> ChunkWriter {
    let mut cw = ChunkWriter::new(rec, ids);
    cw.chunk(json!({"role": "assistant", "content": ""}), None);
    cw.chunk(json!({"content": "partial "}), None);
    cw
}

/// The scripted fault in this wire's shape.
pub(crate) fn fault(rec: &Recorded, fault: &Fault, ids: &Ids) -> Answer {
    match fault {
        Fault::Status {
            code,
            retry_after,
            body,
        } => Answer::status_fault(*code, *retry_after, body, error_body),
        Fault::Overloaded => error(503, "The server is overloaded or not ready yet."),
        Fault::PromptTooLong => too_long(250_000, 200_000),
        Fault::DisconnectMidStream => Answer::sse(broken_stream_start(rec, ids).w.abort()),
        Fault::MalformedEvent => {
            let mut cw = broken_stream_start(rec, ids);
            cw.w.raw(
                "data: {\"id\":\"chatcmpl-fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"oops\n\n"
                    .to_string(),
            );
            Answer::sse(cw.w.finish())
        }
        Fault::ErrorEvent => {
            let mut cw = broken_stream_start(rec, ids);
            cw.w.data(&error_body(503, "Overloaded"));
            Answer::sse(cw.w.finish())
        }
        Fault::KeepAliveOnly { every, count } => {
            let mut w = SseWriter::default();
            for _ in 0..*count {
                w.sleep(*every);
                w.raw(": keep-alive\n\n".to_string());
            }
            Answer::sse(w.finish())
        }
    }
}
