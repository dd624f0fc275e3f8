//! The hook kinds that are not a command, through the binary: a `prompt` hook asks the model
//! (here the fake one, scripted to answer it) and its `{"ok": false}` blocks as exit 2 does; an
//! `agent` hook runs the same way.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, stderr};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[test]
fn a_prompt_hook_asks_the_model_and_its_no_blocks_the_call() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "prompt", "model": "some-judge-model",
             "prompt": "Refuse anything that touches files. The call: $ARGUMENTS"}
        ]}]}})
        .to_string(),
    );
    let server = FakeServer::start();
    // The lead's requests and its hook's, in the order they come.
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "touch planted"})),
            Step::text(r#"{"ok": false, "reason": "it touches files"}"#),
            Step::tool("bash", json!({"command": "echo fine"})),
            Step::text(r#"{"ok": true}"#),
            Step::text("done"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("planted"));
    let lead = server.requests_for("lead");
    assert_eq!(lead.len(), 5);
    let asked = &lead[1];
    assert_eq!(asked.body["model"], "some-judge-model");
    let question = asked.all_text();
    assert!(
        question.contains("Refuse anything that touches files. The call: {")
            && question.contains("touch planted")
            && question.contains("\"hook_event_name\":\"PreToolUse\""),
        "{question}"
    );
    let refused = lead[2].last_tool_result().unwrap();
    assert!(
        refused.1 && refused.0.contains("it touches files"),
        "{refused:?}"
    );
    let allowed = lead[4].last_tool_result().unwrap();
    assert!(!allowed.1 && allowed.0.contains("fine"), "{allowed:?}");
}

#[test]
fn an_agent_hook_runs_as_a_prompt_hook_and_can_keep_the_turn_going() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        json!({"hooks": {"Stop": [{"hooks": [
            {"type": "agent", "prompt": "Did it run the tests? $ARGUMENTS"}
        ]}]}})
        .to_string(),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::text("all done"),
            Step::text(r#"{"ok": false, "reason": "run the tests first"}"#),
            Step::text("tests ran"),
            Step::text(r#"{"ok": true}"#),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lead = server.requests_for("lead");
    assert_eq!(lead.len(), 4);
    assert!(lead[1]
        .all_text()
        .contains("\"last_assistant_message\":\"all done\""));
    assert!(lead[2].all_text().contains("run the tests first"));
    assert_eq!(common::result_json(&out)["result"], "tests ran");
}
