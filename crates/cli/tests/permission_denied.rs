//! Claude Code's `system/permission_denied` stream-json event, through the real binary: sent
//! for a call refused without anybody asked (a deny rule, the mode, a headless run with nobody
//! to ask), before the call's tool_result; not for what Claude Code leaves out (a PreToolUse
//! hook's deny, a file tool refused by a path-scoped deny rule).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// Runs `-p go` in stream-json with `extra`, the model calling `tool` with `input` once.
fn stream(ws: &TempWorkspace, tool: &str, input: Value, extra: &[&str]) -> Vec<Value> {
    let server = FakeServer::start();
    server.script("lead", [Step::tool(tool, input), Step::text("done")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .args(extra));
    assert!(out.status.success(), "{}", stderr(&out));
    json_lines(&out)
}

fn denied(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "system" && e["subtype"] == "permission_denied")
        .collect()
}

/// The one denial event, checked against the call it refused and placed before its result.
fn the_denial<'a>(events: &'a [Value], tool_name: &str) -> &'a Value {
    let found = denied(events);
    assert_eq!(found.len(), 1, "{events:#?}");
    let event = found[0];
    let call = events
        .iter()
        .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(event["tool_name"], tool_name);
    assert_eq!(event["tool_use_id"], call["id"]);
    assert!(!event["message"].as_str().unwrap_or("").is_empty());
    assert!(event["uuid"].as_str().is_some_and(|u| u.len() == 36));
    let init = &events[0];
    assert_eq!(event["session_id"], init["session_id"]);
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let denial_at = at(&|e| e["subtype"] == "permission_denied");
    let result_at =
        at(&|e| e["type"] == "user" && e["message"]["content"][0]["tool_use_id"] == call["id"]);
    assert!(denial_at < result_at, "the event precedes the tool result");
    // The result object's record agrees.
    let result = events.last().unwrap();
    assert_eq!(
        result["permission_denials"][0]["tool_use_id"],
        event["tool_use_id"]
    );
    event
}

#[test]
fn a_deny_rule_is_announced_as_rule() {
    let ws = TempWorkspace::new();
    ws.write("build/out.o", "x");
    let events = stream(
        &ws,
        "bash",
        json!({"command": "rm -rf build"}),
        &["--disallowedTools", "Bash(rm:*)"],
    );
    let event = the_denial(&events, "Bash");
    assert_eq!(event["decision_reason_type"], "rule");
    // Claude Code gives no decision_reason for a rule: the message says it.
    assert!(event.get("decision_reason").is_none(), "{event}");
    assert!(ws.exists("build/out.o"));
}

#[test]
fn the_mode_is_announced_as_mode() {
    for mode in ["dontAsk", "plan"] {
        let ws = TempWorkspace::new();
        let events = stream(
            &ws,
            "write_file",
            json!({"path": "made.txt", "content": "x"}),
            &["--permission-mode", mode],
        );
        let event = the_denial(&events, "Write");
        assert_eq!(event["decision_reason_type"], "mode", "{mode}");
        assert!(!ws.exists("made.txt"));
    }
}

#[test]
fn a_headless_run_with_nobody_to_ask_is_announced_with_its_reason() {
    let ws = TempWorkspace::new();
    let events = stream(
        &ws,
        "write_file",
        json!({"path": "made.txt", "content": "x"}),
        &[],
    );
    let event = the_denial(&events, "Write");
    assert_eq!(event["decision_reason_type"], "asyncAgent");
    assert_eq!(event["decision_reason"], event["message"]);
    assert!(
        event["message"].as_str().unwrap().contains("acceptEdits"),
        "{event}"
    );
}

#[test]
fn hook_denials_and_path_scoped_file_denials_are_not_announced() {
    // A path-scoped Read deny refusing read_file: only the result's record.
    let ws = TempWorkspace::new();
    ws.write("secrets/key", "s3cret");
    let events = stream(
        &ws,
        "read_file",
        json!({"path": "secrets/key"}),
        &["--disallowedTools", "Read(./secrets/**)"],
    );
    assert!(denied(&events).is_empty(), "{events:#?}");
    let result = events.last().unwrap();
    assert_eq!(result["permission_denials"][0]["tool_name"], "Read");

    // A PreToolUse hook that blocks.
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo 'no rm here' >&2; exit 2"}
        ]}]}})
        .to_string(),
    );
    let events = stream(
        &ws,
        "bash",
        json!({"command": "echo hi"}),
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(denied(&events).is_empty(), "{events:#?}");
}
