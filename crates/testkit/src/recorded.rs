//! A request the fake server received, with readers that hide the wire format from scripts.

use std::time::Instant;

use serde_json::Value;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

use crate::script::Wire;

/// One request as the fake server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The agent it came from (header `x-troupe-agent`, `"lead"` when absent).
    pub agent: String,
    /// The wire format, from the path.
    pub wire: Wire,
    /// The request path, e.g. `/v1/messages`.
    pub path: String,
    /// Request headers in arrival order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON body (a JSON string holding the raw text when the body was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
    /// The size of the body in bytes, as sent.
    pub bytes: usize,
    /// True when the server refused it as larger than its context limit (see
    /// [`FakeServer::set_context_limit`](crate::FakeServer::set_context_limit)).
    pub rejected_too_long: bool,
}

impl Recorded {
    /// The request's size in tokens as the fake server counts them: four bytes a token (its
    /// `cache_control` markers left out), the same estimate its reported usage uses.
    pub fn tokens(&self) -> u64 {
        (self.prompt_bytes() as u64).div_ceil(4)
    }

    /// The body's bytes without its `cache_control` markers (they are not prompt).
    pub fn prompt_bytes(&self) -> usize {
        self.bytes
            .saturating_sub(crate::cache::marker_bytes(&self.body))
    }

    /// How many blocks carry `cache_control` (Anthropic).
    pub fn breakpoints(&self) -> usize {
        crate::cache::keys(&self.body)
            .iter()
            .filter(|b| b.breakpoint.is_some())
            .count()
    }

    /// The prompt up to and including the first block with `cache_control`, as the fake
    /// cache hashes it (each block's JSON without `cache_control`, in the order tools, system,
    /// messages); `None` without a breakpoint.
    pub fn cached_prefix(&self) -> Option<String> {
        let blocks = crate::cache::blocks(&self.body);
        let end = blocks.iter().position(|b| b.breakpoint.is_some())?;
        Some(blocks[..=end].iter().map(|b| b.text.as_str()).collect())
    }

    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True when the client asked for a streamed answer.
    pub fn is_stream(&self) -> bool {
        self.body
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The model the request names.
    pub fn model(&self) -> String {
        self.body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("fake-model")
            .to_string()
    }

    /// The conversation's messages in troupe's Anthropic shape. OpenAI requests are mapped:
    /// system messages are left out (see [`Recorded::system`]), `tool` messages become user
    /// tool_result blocks, assistant `tool_calls` become tool_use blocks, and consecutive user
    /// messages are merged, as Anthropic itself treats them.
    pub fn messages(&self) -> Vec<ChatMessage> {
        let raw = self
            .body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match self.wire {
            Wire::Anthropic => raw.iter().filter_map(anthropic_message).collect(),
            Wire::OpenAi => openai_messages(&raw),
            Wire::Responses => crate::responses::messages(&self.body),
        }
    }

    /// The system prompt text: Anthropic `system` (string or text blocks, joined by newlines),
    /// or the first OpenAI system/developer message.
    pub fn system(&self) -> String {
        match self.wire {
            Wire::Anthropic => self.body.get("system").map(text_of).unwrap_or_default(),
            Wire::Responses => crate::responses::system(&self.body),
            Wire::OpenAi => self
                .body
                .get("messages")
                .and_then(Value::as_array)
                .and_then(|msgs| {
                    msgs.iter()
                        .find(|m| matches!(role_of(m), "system" | "developer"))
                })
                .and_then(|m| m.get("content"))
                .map(text_of)
                .unwrap_or_default(),
        }
    }

    /// The last tool_result of the conversation as (content, is_error). OpenAI `tool` messages
    /// carry no error flag, so their `is_error` is always false.
    pub fn last_tool_result(&self) -> Option<(String, bool)> {
        self.messages().iter().rev().find_map(|m| {
            m.content.iter().rev().find_map(|b| match b {
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
        })
    }

    /// The system prompt, every text block and every tool_result content, joined by newlines —
    /// for `contains` checks that should not care where the text sits.
    pub fn all_text(&self) -> String {
        let mut parts = vec![self.system()];
        for m in self.messages() {
            for b in m.content {
                match b {
                    ContentBlock::Text { text } => parts.push(text),
                    ContentBlock::ToolResult { content, .. } => parts.push(content),
                    ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. }
                    | ContentBlock::ToolUse { .. }
                    | ContentBlock::Image { .. } => {}
                }
            }
        }
        parts.join("\n")
    }

    /// The names of the tools offered to the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| match self.wire {
                Wire::Anthropic | Wire::Responses => t.get("name"),
                Wire::OpenAi => t.get("function").and_then(|f| f.get("name")),
            })
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    }
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The text of a content value that is either a string or an array of text parts.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn anthropic_message(m: &Value) -> Option<ChatMessage> {
    let role = match role_of(m) {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    let content = match m.get("content") {
        Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
        Some(Value::Array(blocks)) => blocks.iter().filter_map(anthropic_block).collect(),
        _ => Vec::new(),
    };
    Some(ChatMessage { role, content })
}

/// An Anthropic base64 image block as troupe's image.
fn image_of(block: &Value) -> Option<troupe_protocol::ImageData> {
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let source = block.get("source")?;
    Some(troupe_protocol::ImageData {
        media_type: str_field(source, "media_type"),
        data: str_field(source, "data"),
    })
}

/// Reads one Anthropic block by hand, because real requests carry shapes the protocol type
/// does not (tool_result content as a block array, cache_control, images).
fn anthropic_block(b: &Value) -> Option<ContentBlock> {
    let kind = b.get("type").and_then(Value::as_str)?;
    Some(match kind {
        "text" => ContentBlock::text(str_field(b, "text")),
        "thinking" => ContentBlock::Thinking {
            thinking: str_field(b, "thinking"),
            signature: b
                .get("signature")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        "redacted_thinking" => ContentBlock::RedactedThinking {
            data: str_field(b, "data"),
        },
        "tool_use" => ContentBlock::ToolUse {
            id: str_field(b, "id"),
            name: str_field(b, "name"),
            input: b.get("input").cloned().unwrap_or(Value::Null),
        },
        // A prompt's image; one without data (a shape under test) is left out.
        "image" => ContentBlock::Image {
            source: image_of(b).filter(|image| !image.data.is_empty())?,
        },
        "tool_result" => ContentBlock::ToolResult {
            tool_use_id: str_field(b, "tool_use_id"),
            content: b.get("content").map(text_of).unwrap_or_default(),
            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            images: b
                .get("content")
                .and_then(Value::as_array)
                .map(|blocks| blocks.iter().filter_map(image_of).collect())
                .unwrap_or_default(),
        },
        _ => return None,
    })
}

fn openai_messages(raw: &[Value]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    for m in raw {
        let (role, blocks) = match role_of(m) {
            "user" => (Role::User, openai_user_blocks(m)),
            "tool" => (
                Role::User,
                vec![ContentBlock::tool_result(
                    str_field(m, "tool_call_id"),
                    m.get("content").map(text_of).unwrap_or_default(),
                    false,
                )],
            ),
            "assistant" => (Role::Assistant, openai_assistant_blocks(m)),
            _ => continue,
        };
        match out.last_mut() {
            Some(prev) if role == Role::User && prev.role == Role::User => {
                prev.content.extend(blocks)
            }
            _ => out.push(ChatMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

fn openai_user_blocks(m: &Value) -> Vec<ContentBlock> {
    match m.get("content") {
        Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("text").and_then(Value::as_str) {
                Some(text) => Some(ContentBlock::text(text)),
                None => image_url_of(p).map(|source| ContentBlock::Image { source }),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An `image_url` part's image, when its URL is a base64 `data:` URL.
fn image_url_of(part: &Value) -> Option<troupe_protocol::ImageData> {
    let url = part.get("image_url")?.get("url")?.as_str()?;
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    Some(troupe_protocol::ImageData {
        media_type: media_type.to_string(),
        data: data.to_string(),
    })
}

fn openai_assistant_blocks(m: &Value) -> Vec<ContentBlock> {
    let mut blocks = Vec::new();
    if let Some(r) = m.get("reasoning_content").and_then(Value::as_str) {
        if !r.is_empty() {
            blocks.push(ContentBlock::Thinking {
                thinking: r.to_string(),
                signature: None,
            });
        }
    }
    let text = m.get("content").map(text_of).unwrap_or_default();
    if !text.is_empty() {
        blocks.push(ContentBlock::text(text));
    }
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for call in &calls {
        let function = call.get("function").cloned().unwrap_or(Value::Null);
        let args = str_field(&function, "arguments");
        // Arguments are a JSON string on this wire; keep the raw text when it does not parse
        // so a script can still see what the client sent.
        let input = serde_json::from_str(&args).unwrap_or(Value::String(args));
        blocks.push(ContentBlock::ToolUse {
            id: str_field(call, "id"),
            name: str_field(&function, "name"),
            input,
        });
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(wire: Wire, body: Value) -> Recorded {
        Recorded {
            agent: "lead".into(),
            wire,
            path: "/v1/x".into(),
            headers: Vec::new(),
            body,
            at: Instant::now(),
            bytes: 0,
            rejected_too_long: false,
        }
    }

    #[test]
    fn openai_conversation_maps_to_the_anthropic_shape() {
        let rec = recorded(
            Wire::OpenAi,
            json!({"messages": [
                {"role": "system", "content": "you are the lead"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "glob", "arguments": "not json"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.rs\nb.rs"},
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "no match"}]},
                {"role": "user", "content": "<inbox>hello from alice</inbox>"},
            ],
            "tools": [{"type": "function", "function": {"name": "bash"}}, {"type": "function", "function": {"name": "glob"}}]}),
        );
        let msgs = rec.messages();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert_eq!(msgs[0], ChatMessage::user_text("list files"));
        assert_eq!(msgs[1].role, Role::Assistant);
        assert_eq!(
            msgs[1].content,
            vec![
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"})
                },
                ContentBlock::ToolUse {
                    id: "call_2".into(),
                    name: "glob".into(),
                    input: json!("not json")
                },
            ]
        );
        assert_eq!(
            msgs[2].content,
            vec![
                ContentBlock::tool_result("call_1", "a.rs\nb.rs", false),
                ContentBlock::tool_result("call_2", "no match", false),
                ContentBlock::text("<inbox>hello from alice</inbox>"),
            ]
        );
        assert_eq!(rec.system(), "you are the lead");
        assert_eq!(
            rec.last_tool_result(),
            Some(("no match".to_string(), false))
        );
        assert_eq!(rec.tool_names(), vec!["bash", "glob"]);
        let all = rec.all_text();
        assert!(all.starts_with("you are the lead\n"));
        assert!(all.contains("a.rs\nb.rs") && all.contains("hello from alice"));
        assert!(!all.contains("command"), "tool inputs are not text");
    }

    #[test]
    fn anthropic_blocks_are_read_with_their_real_world_shapes() {
        let rec = recorded(
            Wire::Anthropic,
            json!({
                "system": [{"type": "text", "text": "identity", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "team"}],
                "messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "s1"},
                        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "false"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                         "content": [{"type": "text", "text": "exit 1"}]},
                        {"type": "image", "source": {}},
                    ]},
                ],
                "tools": [{"name": "bash"}, {"name": "read_file"}],
            }),
        );
        let msgs = rec.messages();
        assert_eq!(msgs.len(), 3);
        assert_eq!(
            msgs[1].content[0],
            ContentBlock::Thinking {
                thinking: "hm".into(),
                signature: Some("s1".into())
            }
        );
        assert!(msgs[1].has_tool_use());
        assert_eq!(
            msgs[2].content,
            vec![ContentBlock::tool_result("toolu_1", "exit 1", true)]
        );
        assert_eq!(rec.system(), "identity\nteam");
        assert_eq!(rec.last_tool_result(), Some(("exit 1".to_string(), true)));
        assert_eq!(rec.tool_names(), vec!["bash", "read_file"]);
        assert_eq!(rec.all_text(), "identity\nteam\ngo\nexit 1");
    }

    #[test]
    fn a_conversation_without_tool_results_has_none() {
        let rec = recorded(
            Wire::Anthropic,
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        );
        assert_eq!(rec.last_tool_result(), None);
        assert_eq!(rec.system(), "");
        assert!(rec.tool_names().is_empty());
    }
}
