//! `--output-format stream-json`: one JSON object per line, written as things happen.

use serde_json::{json, Value};
use std::io::Write;
use troupe_agent::AgentEvent;

/// Writes one event line to stdout and flushes it, so a reader sees it at once.
pub fn emit(value: &Value) {
    let mut out = std::io::stdout().lock();
    // A closed pipe means nobody is reading; the run goes on and the exit code still tells.
    let _ = writeln!(out, "{}", super::sanitize::json_line(&value.to_string()));
    let _ = out.flush();
}

/// The `system/init` event; `mcp_servers` lists `{name, status}` as Claude Code's does.
pub fn init(
    session_id: &str,
    model: &str,
    cwd: &str,
    tools: &[String],
    permission_mode: &str,
    mcp_servers: Value,
) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "model": model,
        "cwd": cwd,
        "tools": tools,
        "mcp_servers": mcp_servers,
        "permissionMode": permission_mode,
    })
}

/// The event for one agent event, if it has one (deltas are not streamed as lines).
pub fn event(session_id: &str, agent: &str, event: &AgentEvent<'_>) -> Option<Value> {
    match event {
        AgentEvent::Assistant(message) => Some(
            json!({"type": "assistant", "agent": agent, "message": message, "session_id": session_id}),
        ),
        AgentEvent::ToolResults(message) => Some(
            json!({"type": "user", "agent": agent, "message": message, "session_id": session_id}),
        ),
        AgentEvent::MailInjected { count, text } => Some(json!({
            "type": "system", "subtype": "mail", "agent": agent, "count": count, "text": text, "session_id": session_id
        })),
        AgentEvent::Retrying {
            attempt,
            wait_ms,
            reason,
        } => Some(json!({
            "type": "system", "subtype": "retry", "agent": agent, "attempt": attempt, "wait_ms": wait_ms,
            "reason": reason, "session_id": session_id
        })),
        // Claude Code's name and fields for it, with troupe's own beside them.
        AgentEvent::Compacted(c) => Some(json!({
            "type": "system", "subtype": "compact_boundary", "agent": agent, "session_id": session_id,
            "compact_metadata": {
                "trigger": c.reason.trigger().as_str(), "pre_tokens": c.tokens_before,
                "post_tokens": c.tokens_after, "reason": c.reason.as_str(),
                "summarized_messages": c.summarized, "kept_messages": c.kept,
            },
        })),
        AgentEvent::TextDelta(_)
        | AgentEvent::ThinkingDelta(_)
        | AgentEvent::ToolStarted { .. } => None,
    }
}
