//! `--permission-prompt-tool stdio`: permission questions go to the controlling process as
//! `can_use_tool` control requests (the Agent SDK's `can_use_tool` callback answers them), in
//! Claude Code's tool names and input fields (`Read{file_path}`); an answer's `updatedInput`
//! is mapped back to troupe's (`troupe_protocol::claude_names`).

use super::input::Pending;
use crate::render::stream_json;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::{Approval, Approver, Question};
use troupe_protocol::claude_names;

/// Asks the controlling process over stdout and waits for its answer on stdin.
pub struct ControlApprover {
    pending: Arc<Pending>,
    /// The workspace, which Claude Code's absolute `file_path` is relative to.
    root: PathBuf,
}

impl ControlApprover {
    /// An approver whose answers arrive through `pending` (filled by the stdin reader), for
    /// the workspace `root`.
    pub fn new(pending: Arc<Pending>, root: PathBuf) -> ControlApprover {
        ControlApprover { pending, root }
    }
}

#[async_trait]
impl Approver for ControlApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        let id = format!("troupe_{}", uuid::Uuid::new_v4().simple());
        let answer = self.pending.register(&id);
        stream_json::emit(&json!({
            "type": "control_request",
            "request_id": id,
            "request": {
                "subtype": "can_use_tool",
                "tool_name": claude_names::shown_name(question.tool),
                "input": claude_names::input_to_claude(question.tool, question.input, &self.root),
                "permission_suggestions": [],
                "decision_reason": question.reason,
                "agent_id": question.agent,
            },
        }));
        match answer.await {
            Ok(Ok(response)) => {
                let approval = decide(&response, question.tool, &self.root);
                match question.tool == troupe_agent::session_tools::EXIT_PLAN_MODE {
                    true => with_mode(approval, &response, question.input),
                    false => approval,
                }
            }
            Ok(Err(error)) => Approval::Deny(format!("the permission callback failed: {error}")),
            Err(_) => Approval::Deny(
                "the controlling process closed stdin before answering the permission request"
                    .to_string(),
            ),
        }
    }
}

/// The Agent SDK's `{behavior: allow|deny, updatedInput?, message?}` as an approval for a
/// call of troupe's tool `tool`.
pub fn decide(response: &Value, tool: &str, root: &Path) -> Approval {
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => match response.get("updatedInput").filter(|v| v.is_object()) {
            Some(updated) => {
                Approval::AllowWith(claude_names::input_from_claude(tool, updated, root))
            }
            None => Approval::Allow,
        },
        Some("deny") => Approval::Deny(
            response
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or("denied by the permission callback")
                .to_string(),
        ),
        _ => Approval::Deny(format!(
            "the permission callback answered without a behavior (allow or deny): {response}"
        )),
    }
}

/// An approved plan with the mode the answer set next (`setMode` in `updatedPermissions`).
fn with_mode(approval: Approval, response: &Value, asked: &Value) -> Approval {
    let mode = response
        .get("updatedPermissions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("type").and_then(Value::as_str) == Some("setMode"))
        .and_then(|p| p.get("mode").cloned());
    let (mut input, mode) = match (approval, mode) {
        (Approval::Allow, Some(mode)) => (asked.clone(), mode),
        (Approval::AllowWith(input), Some(mode)) => (input, mode),
        (approval, _) => return approval,
    };
    if let Some(fields) = input.as_object_mut() {
        fields.insert("mode".to_string(), mode);
    }
    Approval::AllowWith(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviors_map_to_approvals() {
        let root = Path::new("/ws");
        let decide = |v: Value| decide(&v, "write_file", root);
        assert_eq!(decide(json!({"behavior": "allow"})), Approval::Allow);
        assert_eq!(
            decide(
                json!({"behavior": "allow", "updatedInput": {"file_path": "/ws/b.txt", "content": "x"}})
            ),
            Approval::AllowWith(json!({"path": "b.txt", "content": "x"}))
        );
        assert_eq!(
            decide(json!({"behavior": "deny", "message": "no rm"})),
            Approval::Deny("no rm".into())
        );
        assert!(matches!(decide(json!({})), Approval::Deny(m) if m.contains("without a behavior")));
    }
}
