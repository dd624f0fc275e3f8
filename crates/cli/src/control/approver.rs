//! `--permission-prompt-tool stdio`: permission questions go to the controlling process as
//! `can_use_tool` control requests (the Agent SDK's `can_use_tool` callback answers them).

use super::input::Pending;
use crate::render::stream_json;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use troupe_agent::{Approval, Approver, Question};

/// Asks the controlling process over stdout and waits for its answer on stdin.
pub struct ControlApprover {
    pending: Arc<Pending>,
}

impl ControlApprover {
    /// An approver whose answers arrive through `pending` (filled by the stdin reader).
    pub fn new(pending: Arc<Pending>) -> ControlApprover {
        ControlApprover { pending }
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
                "tool_name": question.tool,
                "input": question.input,
                "permission_suggestions": [],
                "decision_reason": question.reason,
                "agent_id": question.agent,
            },
        }));
        match answer.await {
            Ok(Ok(response)) => decide(&response),
            Ok(Err(error)) => Approval::Deny(format!("the permission callback failed: {error}")),
            Err(_) => Approval::Deny(
                "the controlling process closed stdin before answering the permission request"
                    .to_string(),
            ),
        }
    }
}

/// The Agent SDK's `{behavior: allow|deny, message?}` as an approval.
pub fn decide(response: &Value) -> Approval {
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => Approval::Allow,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviors_map_to_approvals() {
        assert_eq!(
            decide(&json!({"behavior": "allow", "updatedInput": {}})),
            Approval::Allow
        );
        assert_eq!(
            decide(&json!({"behavior": "deny", "message": "no rm"})),
            Approval::Deny("no rm".into())
        );
        assert!(
            matches!(decide(&json!({})), Approval::Deny(m) if m.contains("without a behavior"))
        );
    }
}
