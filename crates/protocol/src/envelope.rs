//! Team mail: the envelope written as one JSON line in a recipient's mailbox log.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::new_id;

/// What a piece of mail is; the wire name is the snake_case `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailKind {
    /// A direct message from one agent to another.
    Message,
    /// A copy of a message sent to every live member.
    Broadcast,
    /// The lead asks a teammate to shut down (carries a `request_id`).
    ShutdownRequest,
    /// A teammate's answer to a shutdown request.
    ShutdownResponse,
    /// A teammate submits a plan for approval.
    PlanApprovalRequest,
    /// The lead's verdict on a plan.
    PlanApprovalResponse,
    /// A teammate asks the lead whether it may run a tool call.
    PermissionRequest,
    /// The lead's verdict on a permission request.
    PermissionResponse,
    /// A teammate reports that it went idle (kept for compatibility; idle is a roster state).
    IdleNotification,
    /// The result of a work phase, delivered to the lead.
    TaskResult,
}

impl MailKind {
    /// The wire name, as written in the `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            MailKind::Message => "message",
            MailKind::Broadcast => "broadcast",
            MailKind::ShutdownRequest => "shutdown_request",
            MailKind::ShutdownResponse => "shutdown_response",
            MailKind::PlanApprovalRequest => "plan_approval_request",
            MailKind::PlanApprovalResponse => "plan_approval_response",
            MailKind::PermissionRequest => "permission_request",
            MailKind::PermissionResponse => "permission_response",
            MailKind::IdleNotification => "idle_notification",
            MailKind::TaskResult => "task_result",
        }
    }

    /// True for the kinds that belong to a protocol request and so carry a `request_id`.
    pub fn is_protocol(self) -> bool {
        match self {
            MailKind::ShutdownRequest
            | MailKind::ShutdownResponse
            | MailKind::PlanApprovalRequest
            | MailKind::PlanApprovalResponse
            | MailKind::PermissionRequest
            | MailKind::PermissionResponse => true,
            MailKind::Message
            | MailKind::Broadcast
            | MailKind::IdleNotification
            | MailKind::TaskResult => false,
        }
    }
}

impl std::fmt::Display for MailKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of team mail: one JSON line in `inbox/<to>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique, sortable id; consumers skip an id they have already processed.
    pub id: String,
    /// What the mail is.
    #[serde(rename = "type")]
    pub kind: MailKind,
    /// Sender's agent name.
    pub from: String,
    /// Recipient's agent name.
    pub to: String,
    /// Human/model-readable text.
    pub content: String,
    /// When it was sent, in milliseconds since the Unix epoch.
    pub ts: u64,
    /// The protocol request this mail belongs to, for protocol kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Typed protocol data (for example `{"approve": true, "reason": "..."}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// The W3C trace context the sender worked under, when telemetry traces it: the turn the
    /// mail wakes continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl Envelope {
    /// Creates mail with a fresh id, no request id and no payload.
    pub fn new(
        kind: MailKind,
        from: impl Into<String>,
        to: impl Into<String>,
        content: impl Into<String>,
        now_ms: u64,
    ) -> Envelope {
        let from = from.into();
        Envelope {
            id: new_id(),
            kind,
            traceparent: crate::trace_context::current(&from),
            from,
            to: to.into(),
            content: content.into(),
            ts: now_ms,
            request_id: None,
            payload: None,
        }
    }

    /// Returns the envelope tied to a protocol request.
    pub fn with_request(mut self, request_id: impl Into<String>) -> Envelope {
        self.request_id = Some(request_id.into());
        self
    }

    /// Returns the envelope carrying a typed payload.
    pub fn with_payload(mut self, payload: Value) -> Envelope {
        self.payload = Some(payload);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_message_wire_shape() {
        let env = Envelope::new(MailKind::Message, "lead", "alice", "hi", 42);
        let v = serde_json::to_value(&env).unwrap_or_default();
        assert_eq!(v["type"], "message");
        assert_eq!(v["from"], "lead");
        assert_eq!(v["to"], "alice");
        assert_eq!(v["content"], "hi");
        assert_eq!(v["ts"], 42);
        assert_eq!(v["id"].as_str().map(str::len), Some(26));
        // Optional protocol fields are left out of plain mail, keeping lines short.
        assert!(v.get("request_id").is_none());
        assert!(v.get("payload").is_none());
    }

    #[test]
    fn protocol_message_round_trips() {
        let env = Envelope::new(MailKind::ShutdownResponse, "alice", "lead", "ok", 7)
            .with_request("r1")
            .with_payload(json!({"approve": true}));
        let line = serde_json::to_string(&env).unwrap_or_default();
        assert!(line.contains("\"type\":\"shutdown_response\""));
        assert!(!line.contains('\n'));
        let back: Envelope = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, env);
    }

    #[test]
    fn every_kind_uses_its_wire_name() {
        let kinds = [
            MailKind::Message,
            MailKind::Broadcast,
            MailKind::ShutdownRequest,
            MailKind::ShutdownResponse,
            MailKind::PlanApprovalRequest,
            MailKind::PlanApprovalResponse,
            MailKind::PermissionRequest,
            MailKind::PermissionResponse,
            MailKind::IdleNotification,
            MailKind::TaskResult,
        ];
        for kind in kinds {
            let v = serde_json::to_value(kind).unwrap_or_default();
            assert_eq!(v, json!(kind.as_str()));
            let back: MailKind = serde_json::from_value(v).unwrap_or(MailKind::Message);
            assert_eq!(back, kind);
        }
    }

    #[test]
    fn missing_optional_fields_deserialize() {
        let line = r#"{"id":"x","type":"broadcast","from":"a","to":"b","content":"c","ts":1}"#;
        let env: Envelope = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(env.kind, MailKind::Broadcast);
        assert_eq!(env.request_id, None);
    }
}
