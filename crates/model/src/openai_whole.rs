//! A whole (non-streaming) Chat Completions response, for a server that cannot stream tool
//! calls: read into the same [`ModelResponse`] the stream assembler builds, with the same live
//! events (the text, each tool call's start) so a person sees the reply as if it had streamed.

use super::OpenAiAssembler;
use crate::http::{Emit, Fault};
use crate::{ModelResponse, StreamEvent};
use serde_json::Value;
use troupe_protocol::Usage;

impl OpenAiAssembler {
    /// Reads `{"choices": [{"message": {content, tool_calls}, "finish_reason"}], "usage"}`.
    pub(super) fn whole_response(
        mut self,
        body: &str,
        emit: Emit<'_>,
    ) -> Result<ModelResponse, Fault> {
        let value: Value = serde_json::from_str(body).map_err(|e| {
            Fault::Malformed(format!(
                "the response is not JSON ({e}): {}",
                body.chars().take(300).collect::<String>()
            ))
        })?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            let message = error
                .as_str()
                .or_else(|| error.get("message").and_then(Value::as_str))
                .unwrap_or("");
            let kind = error.get("type").and_then(Value::as_str).unwrap_or("");
            return Err(Fault::Provider {
                kind: kind.to_owned(),
                message: message.to_owned(),
            });
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = parse_usage(usage);
        }
        let choice = value
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| Fault::Malformed(format!("the response has no choices: {value}")))?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        for key in ["reasoning_content", "reasoning"] {
            if let Some(thinking) = message.get(key).and_then(Value::as_str) {
                if !thinking.is_empty() {
                    emit(StreamEvent::ThinkingDelta(thinking.to_owned()));
                }
            }
        }
        let text = content_text(message.get("content").unwrap_or(&Value::Null));
        if !text.is_empty() {
            emit(StreamEvent::TextDelta(text.clone()));
            self.text = text;
        }
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                // Whole calls are numbered by their place; an `index` a server sends anyway
                // is kept.
                let mut call = call.clone();
                if call.get("index").and_then(Value::as_u64).is_none() {
                    call["index"] = Value::from(position as u64);
                }
                self.apply_tool_call(&call, position, &mut *emit);
            }
        }
        self.finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // The body is the whole answer: nothing is missing, whatever finish_reason says.
        self.done = true;
        self.tools_offered = false;
        crate::http::Assembler::finish(self)
    }
}

/// A message's content: a string, null, or an array of parts of which the text ones count.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Maps Chat Completions usage; cached prompt tokens are reported apart from the others, as
/// [`Usage::input_tokens`] counts only tokens not read from cache.
pub(super) fn parse_usage(usage: &Value) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = number("/prompt_tokens_details/cached_tokens");
    Usage {
        input_tokens: number("/prompt_tokens").saturating_sub(cached),
        output_tokens: number("/completion_tokens"),
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: 0,
        estimated: false,
    }
}

#[cfg(test)]
mod tests {
    use crate::http::{Assembler, Fault};
    use crate::openai::OpenAiAssembler;
    use crate::{StopReason, StreamEvent, INVALID_TOOL_INPUT_KEY};
    use serde_json::json;
    use troupe_protocol::{ContentBlock, Usage};

    fn read(body: &str) -> (Result<crate::ModelResponse, Fault>, Vec<StreamEvent>) {
        let mut events = Vec::new();
        let result = OpenAiAssembler::new().whole(body, &mut |e| events.push(e));
        (result, events)
    }

    #[test]
    fn reads_text_tool_calls_finish_reason_and_usage() {
        // llama.cpp's non-streaming answer to a request with tools.
        let body = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "smollm2",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.",
                "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                ]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        })
        .to_string();
        let (result, events) = read(&body);
        let response = result.unwrap_or_else(|f| panic!("{f:?}"));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.content.len(), 3);
        assert_eq!(response.content[0], ContentBlock::text("Let me look."));
        assert_eq!(
            response.content[1],
            ContentBlock::ToolUse {
                id: "call_a".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
            }
        );
        // A call without an id gets a generated one, and stays a call of its own.
        match &response.content[2] {
            ContentBlock::ToolUse { id, name, input } => {
                assert!(id.starts_with("call_") && id != "call_a", "{id}");
                assert_eq!(name, "read_file");
                assert_eq!(input, &json!({"path": "a.txt"}));
            }
            other => panic!("expected a tool call, got {other:?}"),
        }
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 30,
                ..Usage::default()
            }
        );
        // The live events a stream would have given: the text, then each call's start.
        assert_eq!(events[0], StreamEvent::TextDelta("Let me look.".into()));
        let starts: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolUseStart { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(starts, ["bash", "read_file"]);
    }

    #[test]
    fn null_content_part_arrays_missing_usage_and_bad_arguments() {
        let body = json!({"choices": [{"finish_reason": "stop", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "reasoning_content": "hmm"}}]})
        .to_string();
        let (result, events) = read(&body);
        let response = result.unwrap_or_else(|f| panic!("{f:?}"));
        assert_eq!(response.content, vec![ContentBlock::text("ab")]);
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        // No usage: left at zero for the client to estimate.
        assert_eq!(response.usage, Usage::default());
        assert_eq!(events[0], StreamEvent::ThinkingDelta("hmm".into()));

        let body = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c1", "function": {"name": "bash", "arguments": "{\"command\": "}}]}}]})
        .to_string();
        let (result, _) = read(&body);
        let response = result.unwrap_or_else(|f| panic!("{f:?}"));
        // No finish_reason but a call: the model asked for tools.
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.content,
            vec![ContentBlock::ToolUse {
                id: "c1".into(),
                name: "bash".into(),
                input: json!({INVALID_TOOL_INPUT_KEY: "{\"command\": "}),
            }]
        );
    }

    #[test]
    fn an_error_body_or_nonsense_is_a_fault() {
        let (result, _) = read(r#"{"error":{"message":"overloaded","type":"server_error"}}"#);
        assert_eq!(
            result.err(),
            Some(Fault::Provider {
                kind: "server_error".into(),
                message: "overloaded".into()
            })
        );
        let (result, _) = read("<html>bad gateway</html>");
        assert!(matches!(result, Err(Fault::Malformed(m)) if m.contains("not JSON")));
        let (result, _) = read(r#"{"choices": []}"#);
        assert!(matches!(result, Err(Fault::Malformed(m)) if m.contains("no choices")));
    }
}
