//! `--output-format stream-json`: one JSON object per line, written as things happen, in
//! Claude Code's shapes (`type` first; one assistant event per content block, with the
//! message's id, model, stop reason and usage; `uuid` and `parent_tool_use_id` on every
//! message event; `tool_use_result` on tool results). troupe's additions (`agent`, team
//! notices) are extra fields and extra `system` subtypes, which the Agent SDK passes through.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use troupe_agent::AgentEvent;
use troupe_protocol::claude_names;
use troupe_protocol::{ChatMessage, ContentBlock, Usage};

/// Writes one event line to stdout and flushes it, so a reader sees it at once.
pub fn emit(value: &Value) {
    let mut out = std::io::stdout().lock();
    // A closed pipe means nobody is reading; the run goes on and the exit code still tells.
    let _ = writeln!(out, "{}", super::sanitize::json_line(&value.to_string()));
    let _ = out.flush();
}

/// A fresh event id, as Claude Code's `uuid` fields are.
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What `system/init` reports about the session.
pub struct Init<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// The model.
    pub model: &'a str,
    /// The workspace.
    pub cwd: &'a str,
    /// The tools offered to the model.
    pub tools: &'a [String],
    /// The permission mode.
    pub permission_mode: &'a str,
    /// `{name, status}` per MCP server.
    pub mcp_servers: Value,
    /// Which variable the credentials came from (`none` for a local server without a key).
    pub api_key_source: &'a str,
    /// The agent definitions the `task` tool can run.
    pub agents: Vec<String>,
    /// The skills found.
    pub skills: Vec<String>,
    /// Every slash command: the built-in ones, then the custom ones.
    pub slash_commands: Vec<String>,
    /// The output style in force.
    pub output_style: &'a str,
}

/// The Claude Code version whose output troupe's matches field by field
/// (crates/cli/tests/fixtures/claude-code/VERSION).
pub const CONTRACT_VERSION: &str = "2.1.328";

/// The REPL's built-in slash commands, as `system/init` lists them (the project's custom
/// ones follow).
pub const SLASH_COMMANDS: &[&str] = &[
    "help", "clear", "compact", "context", "cost", "team", "tasks", "mcp", "memory", "model",
    "exit",
];

/// The `system/init` event, with Claude Code's fields.
pub fn init(info: &Init<'_>) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": info.cwd,
        "session_id": info.session_id,
        "tools": info
            .tools
            .iter()
            .map(|t| claude_names::shown_name(t))
            .collect::<Vec<_>>(),
        "mcp_servers": info.mcp_servers,
        "model": info.model,
        "permissionMode": info.permission_mode,
        "slash_commands": info.slash_commands,
        "apiKeySource": info.api_key_source,
        // The Claude Code release whose headless contract troupe speaks (the recorded fixture's):
        // the Agent SDK gates features on it.
        "claude_code_version": CONTRACT_VERSION,
        "troupe_version": env!("CARGO_PKG_VERSION"),
        "output_style": info.output_style,
        "agents": info.agents,
        "skills": info.skills,
        "uuid": uuid(),
    })
}

/// The message a model reply belongs to, remembered from [`AgentEvent::Reply`] until its
/// content arrives.
struct Reply {
    id: String,
    model: String,
    stop_reason: String,
    usage: Usage,
}

/// Turns one agent's events into stream-json lines.
pub struct Stream {
    session_id: String,
    agent: String,
    /// Set for a subagent's or a teammate's events: the call they work for.
    parent_tool_use_id: Option<String>,
    partial: bool,
    reply: Option<Reply>,
    /// The last reply's stop reason, for the result object.
    pub last_stop_reason: Option<String>,
    /// The workspace, which Claude Code's absolute `file_path` is relative to.
    root: PathBuf,
    /// When the first content of the model arrived since [`Stream::take_ttft`] last asked.
    first_content: Option<std::time::Instant>,
}

impl Stream {
    /// Lines for `agent`'s events in `session_id` in workspace `root`; with `partial`,
    /// streamed deltas too (`--include-partial-messages`).
    pub fn new(session_id: &str, agent: &str, partial: bool, root: &Path) -> Stream {
        Stream {
            root: root.to_path_buf(),
            first_content: None,
            session_id: session_id.to_string(),
            agent: agent.to_string(),
            parent_tool_use_id: None,
            partial,
            reply: None,
            last_stop_reason: None,
        }
    }

    /// Notes what the result object needs from an event without making its lines (for runs
    /// that print only the result).
    pub fn note(&mut self, event: &AgentEvent<'_>) {
        self.mark_first_content(event);
        if let AgentEvent::Reply { stop_reason, .. } = event {
            self.last_stop_reason = Some(stop_reason.as_str().to_string());
        }
    }

    /// Claude Code's `ttft_ms`: milliseconds from `started` to the model's first content (a
    /// streamed delta, else the first whole reply) since the last call.
    pub fn take_ttft(&mut self, started: std::time::Instant) -> Option<u64> {
        self.first_content
            .take()
            .map(|at| at.saturating_duration_since(started).as_millis() as u64)
    }

    fn mark_first_content(&mut self, event: &AgentEvent<'_>) {
        let content = matches!(
            event,
            AgentEvent::TextDelta(_) | AgentEvent::ThinkingDelta(_) | AgentEvent::Reply { .. }
        );
        if content && self.first_content.is_none() {
            self.first_content = Some(std::time::Instant::now());
        }
    }

    /// The lines for one agent event (none for most deltas).
    pub fn event(&mut self, event: &AgentEvent<'_>) -> Vec<Value> {
        self.mark_first_content(event);
        match event {
            AgentEvent::Reply {
                stop_reason,
                usage,
                model,
            } => {
                self.last_stop_reason = Some(stop_reason.as_str().to_string());
                self.reply = Some(Reply {
                    id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
                    model: model.to_string(),
                    stop_reason: stop_reason.as_str().to_string(),
                    usage: **usage,
                });
                Vec::new()
            }
            AgentEvent::Assistant(message) => self.assistant(message),
            AgentEvent::ToolResults(message) => self.tool_results(message),
            AgentEvent::MailInjected { count, text } => vec![json!({
                "type": "system", "subtype": "mail", "agent": self.agent, "count": count,
                "text": text, "session_id": self.session_id, "uuid": uuid(),
            })],
            AgentEvent::Retrying {
                attempt,
                wait_ms,
                reason,
            } => vec![json!({
                "type": "system",
                "subtype": "api_retry",
                "attempt": attempt,
                "max_retries": troupe_model::RetryPolicy::default()
                    .max_attempts
                    .saturating_sub(1),
                "retry_delay_ms": wait_ms,
                "error_status": status_of(reason),
                "error": reason,
                "session_id": self.session_id,
                "uuid": uuid(),
                "agent": self.agent,
            })],
            // troupe's own: said once, when a provider's client changes how it calls.
            AgentEvent::Notice(text) => vec![json!({
                "type": "system", "subtype": "notice", "message": text,
                "session_id": self.session_id, "uuid": uuid(), "agent": self.agent,
            })],
            AgentEvent::TextDelta(text) if self.partial => {
                vec![self.stream_event(json!({"type": "text_delta", "text": text}))]
            }
            AgentEvent::ThinkingDelta(text) if self.partial => {
                vec![self.stream_event(json!({"type": "thinking_delta", "thinking": text}))]
            }
            // Claude Code's name and fields for it, with troupe's own beside them.
            AgentEvent::Compacted(c) => vec![json!({
                "type": "system", "subtype": "compact_boundary",
                "compact_metadata": {
                    "trigger": c.reason.trigger().as_str(), "pre_tokens": c.tokens_before,
                    "post_tokens": c.tokens_after, "reason": c.reason.as_str(),
                    "summarized_messages": c.summarized, "kept_messages": c.kept,
                },
                "session_id": self.session_id, "uuid": uuid(), "agent": self.agent,
            })],
            AgentEvent::PermissionDenied(denial) => vec![self.permission_denied(denial)],
            AgentEvent::TextDelta(_)
            | AgentEvent::ThinkingDelta(_)
            | AgentEvent::ToolStarted { .. }
            | AgentEvent::ToolFinished { .. } => Vec::new(),
        }
    }

    /// Claude Code's `system/permission_denied`: a call refused without anybody asked, with
    /// what decided it (`decision_reason_type`; `decision_reason` only where Claude Code gives
    /// one, for a run with nobody to ask) and what the model was told.
    fn permission_denied(&self, denial: &troupe_agent::PermissionDenial) -> Value {
        let mut event = json!({
            "type": "system",
            "subtype": "permission_denied",
            "tool_name": claude_names::shown_name(&denial.tool_name),
            "tool_use_id": denial.tool_use_id,
            "message": denial.message,
            "uuid": uuid(),
            "session_id": self.session_id,
        });
        if let Some(source) = denial.source {
            event["decision_reason_type"] = json!(source.as_str());
            if source == troupe_agent::permissions::DenialSource::NoApprover {
                event["decision_reason"] = json!(denial.message);
            }
        }
        event
    }

    fn stream_event(&self, delta: Value) -> Value {
        json!({
            "type": "stream_event",
            "event": {"type": "content_block_delta", "index": 0, "delta": delta},
            "parent_tool_use_id": self.parent_tool_use_id,
            "session_id": self.session_id,
            "uuid": uuid(),
            "agent": self.agent,
        })
    }

    /// One event per content block, as Claude Code streams them.
    fn assistant(&mut self, message: &ChatMessage) -> Vec<Value> {
        let reply = self.reply.take().unwrap_or_else(|| Reply {
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            model: String::new(),
            stop_reason: "end_turn".into(),
            usage: Usage::default(),
        });
        message
            .content
            .iter()
            .map(|block| {
                json!({
                    "type": "assistant",
                    "message": {
                        "id": reply.id,
                        "type": "message",
                        "role": "assistant",
                        "model": reply.model,
                        "content": [self.shown(block)],
                        "stop_reason": reply.stop_reason,
                        "stop_sequence": null,
                        "usage": usage_json(&reply.usage),
                    },
                    "parent_tool_use_id": self.parent_tool_use_id,
                    "session_id": self.session_id,
                    "uuid": uuid(),
                    "agent": self.agent,
                })
            })
            .collect()
    }

    /// A content block as Claude Code shows it: a built-in tool's call under Claude Code's
    /// name and input fields (`Read{file_path}`).
    fn shown(&self, block: &ContentBlock) -> Value {
        match block {
            ContentBlock::ToolUse { id, name, input } => json!({
                "type": "tool_use",
                "id": id,
                "name": claude_names::shown_name(name),
                "input": claude_names::input_to_claude(name, input, &self.root),
            }),
            other => json!(other),
        }
    }

    /// One user event per tool result, with `tool_use_result` (troupe's tools return text:
    /// `{content, is_error}`).
    fn tool_results(&self, message: &ChatMessage) -> Vec<Value> {
        message
            .content
            .iter()
            .map(|block| {
                let (result, block) = match block {
                    ContentBlock::ToolResult {
                        content, is_error, ..
                    } => {
                        // Claude Code writes `is_error` even when false.
                        let mut block = json!(block);
                        block["is_error"] = json!(is_error);
                        (json!({"content": content, "is_error": is_error}), block)
                    }
                    other => (Value::Null, json!(other)),
                };
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": [block]},
                    "parent_tool_use_id": self.parent_tool_use_id,
                    "session_id": self.session_id,
                    "uuid": uuid(),
                    "tool_use_result": result,
                    "agent": self.agent,
                })
            })
            .collect()
    }
}

/// Usage in the Anthropic wire's field order.
/// (troupe adds `estimated: true` when the figures are its own estimate).
pub fn usage_json(usage: &Usage) -> Value {
    let mut value = json!({
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    });
    if usage.estimated {
        value["estimated"] = json!(true);
    }
    value
}

/// The HTTP status a retry reason starts with (`429 Too Many Requests …`), if any.
fn status_of(reason: &str) -> Value {
    reason
        .split(|c: char| !c.is_ascii_digit())
        .find(|part| part.len() == 3)
        .and_then(|digits| digits.parse::<u16>().ok())
        .filter(|code| (400..600).contains(code))
        .map_or(Value::Null, Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_becomes_one_event_per_block_with_its_message_fields() {
        let mut stream = Stream::new("s", "lead", false, Path::new("/ws"));
        let stop = troupe_model::StopReason::ToolUse;
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 7,
            ..Usage::default()
        };
        assert!(stream
            .event(&AgentEvent::Reply {
                stop_reason: &stop,
                usage: &usage,
                model: "m",
            })
            .is_empty());
        let message = ChatMessage {
            role: troupe_protocol::Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "hi".into() },
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "read_file".into(),
                    input: json!({"path": "src/a.rs"}),
                },
            ],
        };
        let lines = stream.event(&AgentEvent::Assistant(&message));
        assert_eq!(lines.len(), 2);
        for line in &lines {
            let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
            assert_eq!(keys[0], "type");
            assert_eq!(line["message"]["model"], "m");
            assert_eq!(line["message"]["stop_reason"], "tool_use");
            assert_eq!(line["message"]["usage"]["output_tokens"], 7);
            assert_eq!(line["message"]["id"], lines[0]["message"]["id"]);
            assert!(line["parent_tool_use_id"].is_null());
        }
        let call = &lines[1]["message"]["content"][0];
        assert_eq!(call["name"], "Read");
        assert_eq!(call["input"], json!({"file_path": "/ws/src/a.rs"}));
        assert_eq!(call["id"], "t1");
        assert_eq!(stream.last_stop_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn retry_reasons_give_their_status() {
        assert_eq!(status_of("429 Too Many Requests"), json!(429));
        assert_eq!(status_of("HTTP 529: overloaded"), json!(529));
        assert_eq!(status_of("connection reset"), Value::Null);
    }
}
