//! Renders replies, faults and errors in the Anthropic Messages wire format.

use serde_json::{json, Value};
use troupe_protocol::Usage;

use crate::answer::{Answer, SseWriter};
use crate::recorded::Recorded;
use crate::render::{pieces, Ids};
use crate::script::{Fault, Reply, ReplyBlock, StopReason};

fn stop_name(s: StopReason) -> &'static str {
    match s {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::StopSequence => "stop_sequence",
    }
}

/// The Anthropic error type that goes with an HTTP status.
fn error_type(code: u16) -> &'static str {
    match code {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// An Anthropic error object.
fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// An error answer with the error type usual for `code`.
pub(crate) fn error(code: u16, message: &str) -> Answer {
    Answer::json(code, &error_body(error_type(code), message))
}

/// Anthropic's refusal of a prompt larger than the context window (HTTP 400).
pub(crate) fn too_long(tokens: u64, limit: u64) -> Answer {
    error(
        400,
        &format!("prompt is too long: {tokens} tokens > {limit} maximum"),
    )
}

/// The reply as a stream of events, or as one message object when streaming was not asked.
pub(crate) fn reply(
    rec: &Recorded,
    reply: &Reply,
    ids: &Ids,
    (request_bytes, cached): (usize, crate::cache::CacheUse),
) -> Answer {
    let usage = reply.usage_with_cache(request_bytes, cached);
    let msg_id = format!("msg_fake_{}", ids.next());
    let blocks: Vec<Value> = reply.blocks.iter().map(|b| block_json(b, ids)).collect();
    let stop = stop_name(reply.stop_reason());
    let answer = if rec.is_stream() {
        Answer::sse(stream(rec, &msg_id, &blocks, stop, &usage))
    } else {
        Answer::json(
            200,
            &json!({
                "id": msg_id, "type": "message", "role": "assistant", "model": rec.model(),
                "content": blocks, "stop_reason": stop, "stop_sequence": null,
                "usage": usage_json(&usage, usage.output_tokens),
            }),
        )
    };
    answer.with_header("request-id", format!("req_fake_{}", ids.next()))
}

/// A finished content block, ids and signatures assigned.
fn block_json(b: &ReplyBlock, ids: &Ids) -> Value {
    match b {
        ReplyBlock::Thinking(t) => {
            json!({"type": "thinking", "thinking": t, "signature": format!("sig_fake_{}", ids.next())})
        }
        ReplyBlock::RedactedThinking(data) => json!({"type": "redacted_thinking", "data": data}),
        ReplyBlock::Text(t) => json!({"type": "text", "text": t}),
        ReplyBlock::Tool { name, input } => {
            json!({"type": "tool_use", "id": format!("toolu_{}", ids.next()), "name": name, "input": input})
        }
    }
}

fn usage_json(u: &Usage, output: u64) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": output,
    })
}

fn message_start(w: &mut SseWriter, rec: &Recorded, msg_id: &str, usage: &Usage) {
    let message = json!({
        "id": msg_id, "type": "message", "role": "assistant", "content": [], "model": rec.model(),
        "stop_reason": null, "stop_sequence": null, "usage": usage_json(usage, 1),
    });
    w.event_split(
        "message_start",
        &json!({"type": "message_start", "message": message}),
    );
}

fn delta(w: &mut SseWriter, index: usize, delta: Value) {
    w.event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    );
}

fn ping(w: &mut SseWriter) {
    w.event("ping", &json!({"type": "ping"}));
}

/// The events the real API sends for these finished blocks: each block opens empty, grows by
/// deltas (tool input as several JSON fragments), and closes.
fn stream(
    rec: &Recorded,
    msg_id: &str,
    blocks: &[Value],
    stop: &str,
    usage: &Usage,
) -> Vec<crate::answer::Chunk> {
    let mut w = SseWriter::default();
    message_start(&mut w, rec, msg_id, usage);
    if blocks.is_empty() {
        ping(&mut w);
    }
    for (i, b) in blocks.iter().enumerate() {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
        let text_of = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let start = match kind {
            "thinking" => json!({"type": "thinking", "thinking": ""}),
            // Redacted thinking arrives whole in its start event, without deltas.
            "redacted_thinking" => b.clone(),
            "tool_use" => {
                json!({"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}})
            }
            _ => json!({"type": "text", "text": ""}),
        };
        w.event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": i, "content_block": start}),
        );
        if i == 0 {
            ping(&mut w);
        }
        match kind {
            "thinking" => {
                for p in pieces(&text_of("thinking"), 2) {
                    delta(&mut w, i, json!({"type": "thinking_delta", "thinking": p}));
                }
                delta(
                    &mut w,
                    i,
                    json!({"type": "signature_delta", "signature": b["signature"]}),
                );
            }
            "redacted_thinking" => {}
            "tool_use" => {
                // The real API opens with an empty fragment; clients must cope with it.
                delta(
                    &mut w,
                    i,
                    json!({"type": "input_json_delta", "partial_json": ""}),
                );
                for p in pieces(&b["input"].to_string(), 4) {
                    delta(
                        &mut w,
                        i,
                        json!({"type": "input_json_delta", "partial_json": p}),
                    );
                }
            }
            _ => {
                for p in pieces(&text_of("text"), 3) {
                    delta(&mut w, i, json!({"type": "text_delta", "text": p}));
                }
            }
        }
        w.event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": i}),
        );
    }
    w.event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": usage.output_tokens},
        }),
    );
    w.event("message_stop", &json!({"type": "message_stop"}));
    w.finish()
}

/// The opening of a stream that is about to go wrong: message_start, an open text block and
/// one delta.
fn broken_stream_start(rec: &Recorded, ids: &Ids) -> SseWriter {
    let mut w = SseWriter::default();
    let usage = Usage {
        input_tokens: 1,
        ..Usage::default()
    };
    message_start(&mut w, rec, &format!("msg_fake_{}", ids.next()), &usage);
    w.event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    delta(&mut w, 0, json!({"type": "text_delta", "text": "partial "}));
    w
}

/// The scripted fault in this wire's shape.
pub(crate) fn fault(rec: &Recorded, fault: &Fault, ids: &Ids) -> Answer {
    match fault {
        Fault::Status {
            code,
            retry_after,
            body,
        } => Answer::status_fault(*code, *retry_after, body, |code, message| {
            error_body(error_type(code), message)
        }),
        Fault::Overloaded => error(529, "Overloaded"),
        Fault::PromptTooLong => too_long(250_000, 200_000),
        Fault::DisconnectMidStream => Answer::sse(broken_stream_start(rec, ids).abort()),
        Fault::MalformedEvent => {
            let mut w = broken_stream_start(rec, ids);
            w.raw(
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_del\n\n"
                    .to_string(),
            );
            Answer::sse(w.finish())
        }
        Fault::ErrorEvent => {
            let mut w = broken_stream_start(rec, ids);
            w.event("error", &error_body("overloaded_error", "Overloaded"));
            Answer::sse(w.finish())
        }
        Fault::KeepAliveOnly { every, count } => {
            let mut w = SseWriter::default();
            let usage = Usage {
                input_tokens: 1,
                ..Usage::default()
            };
            message_start(&mut w, rec, &format!("msg_fake_{}", ids.next()), &usage);
            for _ in 0..*count {
                w.sleep(*every);
                ping(&mut w);
            }
            Answer::sse(w.finish())
        }
    }
}
