//! `--effort`, `--thinking` and `--max-thinking-tokens` (as the Agent SDKs pass them) through
//! the real binary and HTTP client: Anthropic's extended thinking with its budget below
//! `max_tokens`, thinking blocks (signed and redacted) sent back across a tool round, adaptive
//! thinking with an effort on newer models, and `reasoning_effort` on OpenAI-compatible servers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// A lead that thinks (signed and redacted), runs one command, then answers.
fn thinking_tool_round(server: &FakeServer) {
    server.script(
        "lead",
        [
            Step::Reply(
                Reply::tool("bash", json!({"command": "echo thought-through"}))
                    .with_thinking("I should run echo.")
                    .with_redacted_thinking("EncryptedOpaqueData=="),
            ),
            Step::text("done"),
        ],
    );
}

fn headless(ws: &TempWorkspace, server: &FakeServer, wire: Wire, extra: &[&str]) -> Value {
    let out = run(troupe(ws.path(), server, wire)
        .env_remove("MAX_THINKING_TOKENS")
        .env_remove("CLAUDE_CODE_EFFORT_LEVEL")
        .args(["-p", "go", "--output-format", "json"])
        .args(["--permission-mode", "bypassPermissions"])
        .args(extra));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("--effort"),
        "no note for a flag in use: {err}"
    );
    assert!(
        !err.contains("--thinking"),
        "no note for a flag in use: {err}"
    );
    result_json(&out)
}

#[test]
fn a_thinking_budget_is_requested_and_thinking_blocks_survive_the_tool_round() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    thinking_tool_round(&server);
    // What the SDKs pass for `thinking: {type: "enabled", budget_tokens: 9000}`.
    let result = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &[
            "--model",
            "claude-sonnet-4-5",
            "--max-thinking-tokens",
            "9000",
            "--max-tokens",
            "4096",
        ],
    );
    assert_eq!(result["result"], "done");
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 9000})
        );
        // The budget must stay below max_tokens; the answer keeps its 4096 above it.
        assert_eq!(request.body["max_tokens"], 9000 + 4096);
        assert!(request.body.get("output_config").is_none());
    }
    // The second call sends the assistant's turn back as it came: the signed thinking and the
    // redacted thinking first, unchanged, then the tool call.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let assistant = &messages[1]["content"];
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(assistant[0]["type"], "thinking", "{assistant}");
    assert_eq!(assistant[0]["thinking"], "I should run echo.");
    let signature = assistant[0]["signature"].as_str().unwrap_or("");
    assert!(signature.starts_with("sig_fake_"), "{assistant}");
    assert_eq!(
        assistant[1],
        json!({"type": "redacted_thinking", "data": "EncryptedOpaqueData=="})
    );
    assert_eq!(assistant[2]["type"], "tool_use");
    let (output, is_error) = requests[1].last_tool_result().unwrap();
    assert!(!is_error && output.contains("thought-through"), "{output}");
}

#[test]
fn newer_models_think_adaptively_at_the_effort_asked() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    thinking_tool_round(&server);
    let result = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &[
            "--model",
            "claude-opus-4-6",
            "--thinking=adaptive",
            "--effort",
            "low",
        ],
    );
    assert_eq!(result["result"], "done");
    let requests = server.requests_for("lead");
    for request in &requests {
        assert_eq!(request.body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(request.body["output_config"], json!({"effort": "low"}));
    }
    let assistant = &requests[1].body["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking", "{assistant}");
    assert_eq!(assistant[1]["type"], "redacted_thinking", "{assistant}");
}

#[test]
fn thinking_off_or_not_asked_sends_no_thinking() {
    for extra in [&["--thinking=disabled"][..], &[]] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        server.set_fallback(|_| Step::text("ok"));
        headless(&ws, &server, Wire::Anthropic, extra);
        let body = &server.requests_for("lead")[0].body;
        assert!(body.get("thinking").is_none(), "{extra:?}: {body}");
        assert!(body.get("output_config").is_none(), "{extra:?}: {body}");
    }
}

#[test]
fn openai_compatible_servers_get_a_reasoning_effort() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    thinking_tool_round(&server);
    let result = headless(&ws, &server, Wire::OpenAi, &["--effort", "medium"]);
    assert_eq!(result["result"], "done");
    for request in server.requests_for("lead") {
        assert_eq!(request.body["reasoning_effort"], "medium");
        assert!(request.body.get("thinking").is_none());
    }
    // Unset, nothing is sent.
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("ok"));
    headless(&ws, &server, Wire::OpenAi, &[]);
    let body = &server.requests_for("lead")[0].body;
    assert!(body.get("reasoning_effort").is_none(), "{body}");
}
