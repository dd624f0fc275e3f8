//! The Agent SDK's hook callbacks: the `hooks` of its `initialize` request are registered with
//! the workspace's hooks, and each time one matches, troupe asks the controlling process with
//! a `hook_callback` control request and reads the answer as a command hook's JSON output.
//! An answer that does not come (an error, stdin closed, the timeout), or one troupe does not
//! understand (an unknown decision, a value of the wrong type), refuses a tool call: a hook
//! that cannot run or be read never means "allowed" (`troupe_hooks::Callbacks`).

use super::input::Pending;
use crate::render::stream_json;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use troupe_hooks::CallbackTransport;

/// Sends `hook_callback` requests over stdout; their answers arrive through `pending`.
pub struct ControlCallbacks {
    pending: Arc<Pending>,
}

impl ControlCallbacks {
    /// A transport whose answers `pending` (filled by the stdin reader) delivers.
    pub fn new(pending: Arc<Pending>) -> ControlCallbacks {
        ControlCallbacks { pending }
    }
}

#[async_trait]
impl CallbackTransport for ControlCallbacks {
    async fn call(
        &self,
        id: &str,
        input: &Value,
        tool_use_id: Option<&str>,
    ) -> Result<Value, String> {
        let request_id = format!("troupe_{}", uuid::Uuid::new_v4().simple());
        let answer = self.pending.register(&request_id);
        stream_json::emit(&json!({
            "type": "control_request",
            "request_id": request_id,
            "request": {
                "subtype": "hook_callback",
                "callback_id": id,
                "input": input,
                "tool_use_id": tool_use_id,
            },
        }));
        match answer.await {
            Ok(answer) => answer,
            Err(_) => Err("the controlling process closed stdin before answering".to_string()),
        }
    }
}
