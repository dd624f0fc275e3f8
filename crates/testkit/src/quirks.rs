//! Real OpenAI-compatible servers that depart from OpenAI's behaviour, reproduced: llama.cpp's
//! server cannot stream a tool call (it closes an empty stream, or refuses outright) and sends
//! no usage in its streams.

use serde_json::{json, Value};

use crate::answer::{Answer, SseWriter};
use crate::recorded::Recorded;
use crate::script::Wire;

/// What the server does with a streaming request that offers tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolStreaming {
    /// Streams the scripted reply, as OpenAI does.
    #[default]
    Supported,
    /// llama.cpp with `tool_choice: "auto"`: HTTP 200, an event stream that closes at once with
    /// no chunk at all (no finish_reason, no `[DONE]`).
    EmptyStream,
    /// HTTP 200 and a role chunk and a piece of text, then the stream closes with no
    /// finish_reason and no `[DONE]`.
    NoFinishReason,
    /// An explicit refusal: HTTP 500 `{"error": {"code": 500, "message": "Cannot use tools with
    /// stream", "type": "server_error"}}` (llama.cpp's wording in the versions that refuse).
    Refused,
}

/// Whether streamed replies carry a usage chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamUsage {
    /// The final usage chunk when `stream_options.include_usage` asks for it, as OpenAI does.
    #[default]
    Sent,
    /// None, whatever the request asks (llama.cpp); whole (non-streaming) answers keep theirs.
    Omitted,
}

/// How the fake OpenAI-compatible server departs from OpenAI's own behaviour. A request
/// answered by a quirk is journaled but plays no scripted step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAiQuirks {
    /// Streaming requests with tools.
    pub tool_streaming: ToolStreaming,
    /// Usage in streams.
    pub stream_usage: StreamUsage,
}

impl OpenAiQuirks {
    /// llama.cpp's server as troupe met it: an empty stream for a streaming request with tools,
    /// and no usage in streams.
    pub fn llama_cpp() -> OpenAiQuirks {
        OpenAiQuirks {
            tool_streaming: ToolStreaming::EmptyStream,
            stream_usage: StreamUsage::Omitted,
        }
    }

    /// The answer the quirks give `rec` instead of its scripted step, if any.
    pub(crate) fn answer(self, rec: &Recorded) -> Option<Answer> {
        let offers_tools = rec
            .body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());
        if rec.wire != Wire::OpenAi || !rec.is_stream() || !offers_tools {
            return None;
        }
        match self.tool_streaming {
            ToolStreaming::Supported => None,
            ToolStreaming::EmptyStream => Some(Answer::sse(SseWriter::default().finish())),
            ToolStreaming::NoFinishReason => {
                let mut w = SseWriter::default();
                for delta in [
                    json!({"role": "assistant", "content": ""}),
                    json!({"content": "I will"}),
                ] {
                    w.data(&json!({
                        "id": "chatcmpl-quirk", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
                    }));
                }
                Some(Answer::sse(w.finish()))
            }
            ToolStreaming::Refused => Some(Answer::json(
                500,
                &json!({"error": {"code": 500, "message": "Cannot use tools with stream", "type": "server_error"}}),
            )),
        }
    }

    /// The request as the reply renderer should see it: without `stream_options` when the
    /// server sends no usage in streams.
    pub(crate) fn shown(self, rec: &Recorded) -> Option<Recorded> {
        if rec.wire != Wire::OpenAi || self.stream_usage == StreamUsage::Sent {
            return None;
        }
        let mut shown = rec.clone();
        if let Some(body) = shown.body.as_object_mut() {
            body.remove("stream_options");
        }
        Some(shown)
    }
}
