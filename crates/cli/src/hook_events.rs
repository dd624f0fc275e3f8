//! `--include-hook-events` with `--output-format stream-json`: every hook run of this process
//! is also a pair of stream-json lines in Claude Code's shapes, `system/hook_started` and
//! `system/hook_response` (`hook_id`, `hook_name` as `Event:subject`, `hook_event`, `output`,
//! `stdout`, `stderr`, `exit_code`, `outcome`). A run is reported once it ended, so both lines
//! are written then, started first.

use serde_json::{json, Value};
use std::sync::OnceLock;
use troupe_hooks::{Ending, HookReport};
use troupe_protocol::claude_names;

/// The session the lines belong to, once the flag asked for them.
static SESSION: OnceLock<String> = OnceLock::new();

/// Streams every hook run of this process from now on, as lines of `session_id`.
pub fn stream(session_id: &str) {
    let _ = SESSION.set(session_id.to_string());
}

/// Writes `report`'s two lines, when [`stream`] was called.
pub fn forward(report: &HookReport<'_>) {
    if let Some(session_id) = SESSION.get() {
        for line in lines(report, session_id) {
            crate::render::stream_json::emit(&line);
        }
    }
}

/// The `hook_started` and `hook_response` lines of one run.
fn lines(report: &HookReport<'_>, session_id: &str) -> [Value; 2] {
    let run = report.run;
    let event = report.event.as_str();
    let hook_name = match report.subject {
        "" => event.to_string(),
        subject => format!("{event}:{}", claude_names::shown_name(subject)),
    };
    let hook_id = crate::render::stream_json::uuid();
    let (outcome, exit_code) = match &run.ending {
        Ending::Exited(0) => ("success", Some(0)),
        Ending::Exited(code) => ("error", Some(*code)),
        Ending::TimedOut(_) => ("cancelled", None),
        Ending::Signalled(_) | Ending::NotStarted(_) => ("error", None),
    };
    let output = match (run.stdout.is_empty(), run.stderr.is_empty()) {
        (_, true) => run.stdout.clone(),
        (true, false) => run.stderr.clone(),
        (false, false) => format!("{}\n{}", run.stdout, run.stderr),
    };
    let started = json!({
        "type": "system",
        "subtype": "hook_started",
        "hook_id": hook_id,
        "hook_name": hook_name,
        "hook_event": event,
        "uuid": crate::render::stream_json::uuid(),
        "session_id": session_id,
        "agent": report.agent,
    });
    let mut response = json!({
        "type": "system",
        "subtype": "hook_response",
        "hook_id": hook_id,
        "hook_name": hook_name,
        "hook_event": event,
        "output": output,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "outcome": outcome,
        "uuid": crate::render::stream_json::uuid(),
        "session_id": session_id,
        "agent": report.agent,
    });
    if let Some(code) = exit_code {
        response["exit_code"] = json!(code);
    }
    [started, response]
}
