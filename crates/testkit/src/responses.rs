//! The OpenAI Responses API (`…/responses`), the wire Codex CLI speaks: replies rendered as its
//! SSE events, and its `input` items read back into troupe's messages. Enough of the API for a
//! scripted conversation (text, function calls and their outputs), so the comparison bench can
//! drive Codex against the same fake model as troupe; troupe itself never speaks it.

use serde_json::{json, Value};
use troupe_protocol::{ChatMessage, ContentBlock, Role, Usage};

use crate::answer::{Answer, SseWriter};
use crate::openai::error;
use crate::recorded::{str_field, text_of, Recorded};
use crate::render::{pieces, Ids};
use crate::script::{Fault, Reply, ReplyBlock};

/// A fixed creation time keeps the output deterministic.
const CREATED: u64 = 1_700_000_000;

/// The refusal of a prompt larger than the context window (HTTP 400,
/// `context_length_exceeded`).
pub(crate) fn too_long(tokens: u64, limit: u64) -> Answer {
    Answer::json(
        400,
        &json!({"error": {
            "message": format!("Your input exceeds the context window of this model ({tokens} tokens, limit {limit})."),
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded",
        }}),
    )
}

fn usage_json(u: &Usage) -> Value {
    let input = u.input_tokens + u.cache_read_input_tokens;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + u.output_tokens,
    })
}

/// The response object of `response.created` and `response.completed`.
fn response_object(
    id: &str,
    rec: &Recorded,
    status: &str,
    output: &[Value],
    usage: Value,
) -> Value {
    json!({
        "id": id, "object": "response", "created_at": CREATED, "status": status,
        "model": rec.model(), "output": output, "usage": usage,
    })
}

/// The reply's output items: one assistant message for the text, one `function_call` per tool.
fn output_items(reply: &Reply, ids: &Ids) -> Vec<Value> {
    let mut text = String::new();
    let mut items = Vec::new();
    for b in &reply.blocks {
        match b {
            ReplyBlock::Text(t) => text.push_str(t),
            ReplyBlock::Thinking(_) | ReplyBlock::RedactedThinking(_) => {}
            ReplyBlock::Tool { name, input } => {
                let n = ids.next();
                items.push(json!({
                    "type": "function_call", "id": format!("fc_fake_{n}"),
                    "call_id": format!("call_{n}"), "name": name,
                    "arguments": input.to_string(), "status": "completed",
                }));
            }
        }
    }
    if !text.is_empty() {
        items.insert(
            0,
            json!({
                "type": "message", "id": format!("msg_fake_{}", ids.next()), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
        );
    }
    items
}

/// The reply as the Responses event stream, or as one response object when streaming was not
/// asked.
pub(crate) fn reply(
    rec: &Recorded,
    reply: &Reply,
    ids: &Ids,
    (request_bytes, cached): (usize, crate::cache::CacheUse),
) -> Answer {
    let usage = usage_json(&reply.usage_with_cache(request_bytes, cached));
    let id = format!("resp_fake_{}", ids.next());
    let items = output_items(reply, ids);
    if !rec.is_stream() {
        return Answer::json(200, &response_object(&id, rec, "completed", &items, usage));
    }
    let mut w = SseWriter::default();
    let mut seq = 0u64;
    let mut event = |w: &mut SseWriter, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        w.event(kind, &data);
    };
    let created = response_object(&id, rec, "in_progress", &[], Value::Null);
    event(&mut w, "response.created", json!({"response": created}));
    for (index, item) in items.iter().enumerate() {
        event(
            &mut w,
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        if item["type"] == "message" {
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            for p in pieces(text, 3) {
                event(
                    &mut w,
                    "response.output_text.delta",
                    json!({"item_id": item["id"], "output_index": index, "content_index": 0, "delta": p}),
                );
            }
        }
        event(
            &mut w,
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    let done = response_object(&id, rec, "completed", &items, usage);
    event(&mut w, "response.completed", json!({"response": done}));
    Answer::sse(w.finish())
}

/// The scripted fault in this wire's shape (stream faults break off after `response.created`).
pub(crate) fn fault(rec: &Recorded, fault: &Fault, ids: &Ids) -> Answer {
    let started = || {
        let mut w = SseWriter::default();
        let created = response_object(
            &format!("resp_fake_{}", ids.next()),
            rec,
            "in_progress",
            &[],
            Value::Null,
        );
        w.event(
            "response.created",
            &json!({"type": "response.created", "response": created}),
        );
        w
    };
    match fault {
        Fault::Status {
            code,
            retry_after,
            body,
        } => Answer::status_fault(*code, *retry_after, body, crate::openai::error_body),
        Fault::Overloaded => error(503, "The server is overloaded or not ready yet."),
        Fault::PromptTooLong => too_long(250_000, 200_000),
        Fault::DisconnectMidStream => Answer::sse(started().abort()),
        Fault::MalformedEvent => {
            let mut w = started();
            w.raw("event: response.output_text.delta\ndata: {\"type\":\"resp\n\n".to_string());
            Answer::sse(w.finish())
        }
        Fault::ErrorEvent => {
            let mut w = started();
            w.event(
                "response.failed",
                &json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "Overloaded"}}}),
            );
            Answer::sse(w.finish())
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

/// A request's `input` items as troupe's messages: user and assistant messages (system and
/// developer ones are left out, like the other wires' system prompt), function calls as
/// tool_use blocks and their outputs as tool_result blocks; consecutive messages of one role
/// merged.
pub(crate) fn messages(body: &Value) -> Vec<ChatMessage> {
    let items = match body.get("input") {
        Some(Value::String(s)) => return vec![ChatMessage::user_text(s.clone())],
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    let mut out: Vec<ChatMessage> = Vec::new();
    for item in items {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let (role, block) = match kind {
            "message" => match item.get("role").and_then(Value::as_str) {
                Some("user") => (Role::User, text_block(item)),
                Some("assistant") => (Role::Assistant, text_block(item)),
                _ => continue,
            },
            "function_call" | "custom_tool_call" => {
                let raw = item
                    .get("arguments")
                    .or_else(|| item.get("input"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let input = serde_json::from_str(raw).unwrap_or(Value::String(raw.to_string()));
                (
                    Role::Assistant,
                    ContentBlock::ToolUse {
                        id: str_field(item, "call_id"),
                        name: str_field(item, "name"),
                        input,
                    },
                )
            }
            "function_call_output" | "custom_tool_call_output" => {
                let output = match item.get("output") {
                    Some(Value::Object(o)) => o.get("content").map(text_of).unwrap_or_default(),
                    Some(other) => text_of(other),
                    None => String::new(),
                };
                (
                    Role::User,
                    ContentBlock::tool_result(str_field(item, "call_id"), output, false),
                )
            }
            _ => continue,
        };
        match out.last_mut() {
            Some(prev) if prev.role == role => prev.content.push(block),
            _ => out.push(ChatMessage {
                role,
                content: vec![block],
            }),
        }
    }
    out
}

fn text_block(item: &Value) -> ContentBlock {
    ContentBlock::text(item.get("content").map(text_of).unwrap_or_default())
}

/// The instructions (the Responses API's system prompt).
pub(crate) fn system(body: &Value) -> String {
    body.get("instructions").map(text_of).unwrap_or_default()
}
