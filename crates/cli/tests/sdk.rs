//! The Claude Agent SDK (PyPI `claude-agent-sdk`, installed by `scripts/test-deps.sh`) drives
//! the real troupe binary unchanged, with `cli_path` pointing at it: a tool loop through
//! `query()`, a `can_use_tool` permission callback that allows one call and denies another,
//! `ClaudeSDKClient.interrupt()` on a slow turn followed by a working one, and PreToolUse hook
//! callbacks (a deny, a callback that raises and one whose decision troupe does not know: the
//! guarded call never runs), and a user message carrying an image block.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
#[path = "sdk/model.rs"]
mod sdk_model;

use sdk_model::model;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use troupe_testkit::{FakeServer, TempWorkspace};

/// Fails, saying how to install it, when the SDK is missing: never a silent pass.
fn require_sdk() {
    let found = Command::new(troupe_testkit::python::python())
        .args(["-c", "import claude_agent_sdk"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "the Claude Agent SDK is not installed: run scripts/test-deps.sh \
         (pip install claude-agent-sdk==0.2.184)"
    );
}

/// Runs one scenario of `tests/sdk/drive.py` and returns what it observed, one object a line.
fn drive(ws: &Path, server: &FakeServer, scenario: &str) -> Vec<Value> {
    require_sdk();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/drive.py");
    let mut cmd = Command::new("timeout");
    cmd.arg("120")
        .arg(troupe_testkit::python::python())
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_troupe"))
        .arg(ws)
        .arg(scenario)
        .current_dir(ws)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("HOME", ws.join(".home"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env(troupe_testkit::AGENT_HEADER_VAR, "1");
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "drive.py {scenario} failed: {stderr}");
    assert!(
        !stderr.contains("too old to report its version"),
        "the SDK did not recognise troupe's init event: {stderr}"
    );
    common::json_lines(&out)
}

fn of_kind<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|v| v["kind"] == kind).collect()
}

#[test]
fn query_runs_a_tool_loop() {
    let ws = TempWorkspace::new();
    ws.write("here.txt", "x");
    let server = model();
    let seen = drive(ws.path(), &server, "loop");
    assert_eq!(seen[0], json!({"kind": "system", "subtype": "init"}));
    let calls = of_kind(&seen, "tool_use");
    assert_eq!(calls.len(), 1, "{seen:?}");
    assert_eq!(calls[0]["input"]["command"], "ls");
    let result = of_kind(&seen, "result");
    assert_eq!(result.len(), 1, "{seen:?}");
    assert_eq!(result[0]["subtype"], "success");
    assert_eq!(result[0]["num_turns"], 2);
    assert_eq!(result[0]["stop_reason"], "end_turn");
    let text = result[0]["result"].as_str().unwrap();
    assert!(text.contains("here.txt"), "{text}");
    // Session ids are UUIDs, as Claude Code's are.
    let id = result[0]["session_id"].as_str().unwrap();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(id.matches('-').count(), 4, "{id}");
}

#[test]
fn can_use_tool_answers_the_permission_questions() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "permission");
    let asked = of_kind(&seen, "asked");
    assert_eq!(asked.len(), 2, "{seen:?}");
    assert_eq!(asked[0]["tool"], "Bash");
    assert_eq!(asked[0]["command"], "touch allowed.txt");
    assert!(ws.exists("allowed.txt"), "the allowed call ran");
    assert!(!ws.exists("denied.txt"), "the denied call did not run");
    let results = of_kind(&seen, "result");
    assert_eq!(results.len(), 2, "{seen:?}");
    assert_eq!(results[0]["permission_denials"], json!([]));
    let denials = results[1]["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{seen:?}");
    assert_eq!(denials[0]["tool_name"], "Bash");
    assert_eq!(denials[0]["tool_input"]["command"], "touch denied.txt");
    assert!(results[1]["result"]
        .as_str()
        .unwrap()
        .contains("the test says no"));
}

#[test]
fn interrupt_ends_a_slow_turn_and_the_session_goes_on() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "interrupt");
    let results = of_kind(&seen, "result");
    assert_eq!(results.len(), 2, "{seen:?}");
    assert_eq!(
        results[0]["is_error"], true,
        "the interrupted turn: {seen:?}"
    );
    assert!(
        !seen.iter().any(|v| v["text"] == "too late"),
        "the slow answer never arrived: {seen:?}"
    );
    assert_eq!(results[1]["subtype"], "success");
    assert_eq!(results[1]["result"], "heard: say hello");
}

#[test]
fn a_hook_callback_denies_the_call_it_guards() {
    let ws = TempWorkspace::new();
    ws.write("build/out.txt", "artifact");
    let server = model();
    let seen = drive(ws.path(), &server, "hook_deny");
    let hooks = of_kind(&seen, "hook");
    assert_eq!(hooks.len(), 1, "{seen:?}");
    assert_eq!(hooks[0]["event"], "PreToolUse");
    assert_eq!(hooks[0]["tool"], "Bash");
    assert_eq!(hooks[0]["command"], "rm -rf build");
    assert!(hooks[0]["tool_use_id"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));
    assert!(ws.exists("build/out.txt"), "the denied rm did not run");
    let result = of_kind(&seen, "result");
    assert_eq!(result.len(), 1, "{seen:?}");
    let text = result[0]["result"].as_str().unwrap();
    assert!(text.contains("the hook protects build"), "{text}");
}

#[test]
fn a_hook_callback_that_fails_refuses_the_call() {
    let ws = TempWorkspace::new();
    ws.write("build/out.txt", "artifact");
    let server = model();
    let seen = drive(ws.path(), &server, "hook_error");
    assert_eq!(of_kind(&seen, "hook").len(), 1, "{seen:?}");
    assert!(
        ws.exists("build/out.txt"),
        "a failed guard never means allowed"
    );
    let result = of_kind(&seen, "result");
    let text = result[0]["result"].as_str().unwrap();
    assert!(text.contains("the guard crashed"), "{text}");
}

#[test]
fn a_hook_callback_answer_troupe_cannot_read_refuses_the_call() {
    let ws = TempWorkspace::new();
    ws.write("build/out.txt", "artifact");
    let server = model();
    let seen = drive(ws.path(), &server, "hook_unknown");
    assert_eq!(of_kind(&seen, "hook").len(), 1, "{seen:?}");
    assert!(
        ws.exists("build/out.txt"),
        "an unknown decision never means allowed"
    );
    let result = of_kind(&seen, "result");
    let text = result[0]["result"].as_str().unwrap();
    assert!(text.contains("is not one troupe understands"), "{text}");
    assert!(text.contains("\"maybe\""), "{text}");
}

#[test]
fn the_sdk_sees_claude_code_names_and_its_updated_input_maps_back() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "rewrite");
    let asked = of_kind(&seen, "asked");
    assert_eq!(asked.len(), 1, "{seen:?}");
    assert_eq!(asked[0]["tool"], "Write");
    let file_path = asked[0]["input"]["file_path"].as_str().unwrap();
    assert!(
        file_path.starts_with('/') && file_path.ends_with("notes/draft.txt"),
        "{file_path}"
    );
    assert!(asked[0]["input"].get("path").is_none(), "{seen:?}");
    let calls = of_kind(&seen, "tool_use");
    assert_eq!(calls[0]["name"], "Write", "{seen:?}");
    assert_eq!(calls[0]["input"]["file_path"], file_path);
    assert_eq!(ws.read("notes/final.txt"), "hello");
    assert!(!ws.exists("notes/draft.txt"), "the answer's input was used");
}

#[test]
fn an_in_process_sdk_server_is_offered_at_once_and_its_tool_runs_in_the_sdk() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "sdk_mcp");
    let init = of_kind(&seen, "system");
    assert!(!init.is_empty(), "{seen:?}");
    let ran = of_kind(&seen, "sdk_tool");
    assert_eq!(ran.len(), 1, "the SDK's tool ran once: {seen:?}");
    assert_eq!(ran[0]["args"], json!({"a": 2, "b": 3}));
    let result = of_kind(&seen, "result");
    assert_eq!(result.len(), 1, "{seen:?}");
    assert_eq!(result[0]["subtype"], "success", "{seen:?}");
    assert_eq!(result[0]["result"], "The tool said: sum=5");
    let first = &server.journal()[0];
    assert!(
        first.tool_names().iter().any(|t| t == "mcp__calc__add"),
        "offered on the first call"
    );
}

#[test]
fn agents_given_to_the_sdk_are_known() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "agents");
    let init = of_kind(&seen, "init");
    assert_eq!(init.len(), 1, "{seen:?}");
    assert_eq!(init[0]["agents"], json!(["reviewer"]));
    let task = server.journal()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .cloned()
        .unwrap();
    assert!(task["description"].as_str().unwrap().contains("reviewer"));
}

#[test]
fn set_model_switches_the_lead_and_the_teammates_spawned_afterwards() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "set_model");
    let results = of_kind(&seen, "result");
    assert_eq!(results.len(), 2, "{seen:?}");
    assert_eq!(results[0]["result"], "heard: say hello");
    let models = |agent: &str| sdk_model::models_of(&server, agent);
    let lead = models("lead");
    assert_eq!(lead[0], "claude-sonnet-4-5", "{lead:?}");
    assert!(lead[1..].iter().all(|m| m == "claude-opus-4-1"), "{lead:?}");
    // The assistant messages the SDK saw name the model that answered.
    let said: Vec<&str> = seen.iter().filter_map(|v| v["model"].as_str()).collect();
    assert_eq!(said.first(), Some(&"claude-sonnet-4-5"), "{seen:?}");
    assert_eq!(said.last(), Some(&"claude-opus-4-1"), "{seen:?}");
    // A teammate spawned after the switch runs on the lead's new model, as Claude Code's
    // subagents inherit the main model.
    let helper = models("helper");
    assert!(
        !helper.is_empty(),
        "the teammate never called the model: {seen:?}"
    );
    assert!(helper.iter().all(|m| m == "claude-opus-4-1"), "{helper:?}");
}

#[test]
fn can_use_tool_answers_ask_user_question() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "ask");
    let asked = of_kind(&seen, "asked");
    assert_eq!(asked.len(), 1, "{seen:?}");
    assert_eq!(asked[0]["tool"], "AskUserQuestion");
    assert_eq!(asked[0]["input"]["questions"][0]["header"], "Colour");
    let result = of_kind(&seen, "result");
    let text = result[0]["result"].as_str().unwrap();
    assert!(text.contains(r#""Which colour?"="Blue""#), "{text}");
}

#[test]
fn an_image_block_from_the_sdk_reaches_the_model_beside_the_text() {
    let ws = TempWorkspace::new();
    let server = model();
    let seen = drive(ws.path(), &server, "image");
    let result = of_kind(&seen, "result");
    assert_eq!(result.len(), 1, "{seen:?}");
    assert_eq!(
        result[0]["result"], "I see 1 image(s): image/png",
        "{seen:?}"
    );
    let request = &server.requests_for("lead")[0];
    let content = &request.body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "describe the picture", "{content}");
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["source"]["media_type"], "image/png", "{content}");
}
