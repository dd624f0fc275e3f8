//! OpenAI-compatible servers as they really are, through the binary: a server that cannot
//! stream tool calls (llama.cpp's: an empty stream, an unfinished one, or an explicit refusal)
//! gets non-streaming requests from the first failure on, said once; a stream without usage
//! gets an estimate, marked; a model without a price costs 0 with a note, and the `pricing`
//! setting prices it. Also Claude Code's space-separated `--allowedTools Bash Edit` form.
//!
//! The llama.cpp behaviours are the testkit's reproduction of them ([`OpenAiQuirks`]); a real
//! llama.cpp server's streamed tool calls are `llama_server.rs`'s subject.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, result_json, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{
    FakeServer, OpenAiQuirks, Reply, Step, StreamUsage, TempWorkspace, ToolStreaming, Wire,
};

/// The words of the fallback notice (the warning on stderr and the `system/notice` event).
const FALLBACK: &str = "cannot stream tool calls";

fn stream_flags(server: &FakeServer) -> Vec<bool> {
    server
        .requests_for("lead")
        .iter()
        .map(|r| r.body["stream"].as_bool().unwrap_or(false))
        .collect()
}

#[test]
fn a_server_that_cannot_stream_tool_calls_is_asked_without_streaming_from_then_on() {
    for quirk in [
        ToolStreaming::EmptyStream,
        ToolStreaming::NoFinishReason,
        ToolStreaming::Refused,
    ] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        server.set_openai_quirks(OpenAiQuirks {
            tool_streaming: quirk,
            ..OpenAiQuirks::llama_cpp()
        });
        server.script(
            "lead",
            [
                Step::tool("bash", json!({"command": "echo one"})),
                Step::tool("bash", json!({"command": "echo two"})),
                Step::text("done"),
            ],
        );
        let out = run(troupe(ws.path(), &server, Wire::OpenAi).args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ]));
        let err = stderr(&out);
        assert!(out.status.success(), "{quirk:?}: {err}");
        let lines = json_lines(&out);
        let result = lines.last().cloned().unwrap_or(Value::Null);
        assert_eq!(result["result"], "done", "{quirk:?}: {result}");
        // One streaming attempt, no retries, then every request (the tool rounds included)
        // without streaming.
        assert_eq!(
            stream_flags(&server),
            [true, false, false, false],
            "{quirk:?}"
        );
        let whole = &server.requests_for("lead")[1];
        assert!(whole.body.get("stream_options").is_none(), "{}", whole.body);
        assert_eq!(whole.body["tool_choice"], "auto");
        assert!(
            !lines.iter().any(|l| l["subtype"] == "api_retry"),
            "{quirk:?}: retried"
        );
        // Said once: one notice event for the person, one warning in the log.
        let notices: Vec<&Value> = lines.iter().filter(|l| l["subtype"] == "notice").collect();
        assert_eq!(notices.len(), 1, "{quirk:?}: {lines:?}");
        assert!(
            notices[0]["message"]
                .as_str()
                .unwrap_or("")
                .contains(FALLBACK),
            "{}",
            notices[0]
        );
        assert_eq!(err.matches(FALLBACK).count(), 1, "{quirk:?}: {err}");
        // The tool calls of the whole answers ran.
        let results: Vec<Value> = lines
            .iter()
            .filter(|l| l["type"] == "user")
            .flat_map(|l| {
                l["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 2, "{quirk:?}: {lines:?}");
        assert!(
            results[0]["content"].to_string().contains("one"),
            "{}",
            results[0]
        );
    }
}

#[test]
fn a_stream_without_usage_is_estimated_and_marked() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_openai_quirks(OpenAiQuirks {
        tool_streaming: ToolStreaming::Supported,
        stream_usage: StreamUsage::Omitted,
    });
    server.script("lead", [Step::text("x".repeat(400).as_str())]);
    let out =
        run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "go", "--output-format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    let usage = &result["usage"];
    assert_eq!(usage["estimated"], true, "{result}");
    // 400 bytes of answer at 4 bytes a token (and a block's framing).
    assert_eq!(usage["output_tokens"], 104, "{result}");
    // The system prompt and the tool definitions alone are thousands of bytes.
    assert!(
        usage["input_tokens"].as_u64().unwrap_or(0) > 500,
        "{result}"
    );
    assert_eq!(
        result["modelUsage"]["local-model"]["estimated"], true,
        "{result}"
    );
    assert_eq!(stream_flags(&server), [true]);

    // A server that counts keeps its figures, unmarked.
    let server = FakeServer::start();
    server.script("lead", [Step::reply(Reply::text("hi").usage(10, 3))]);
    let out =
        run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "go", "--output-format", "json"]));
    let result = result_json(&out);
    assert_eq!(result["usage"]["input_tokens"], 10, "{result}");
    assert!(result["usage"].get("estimated").is_none(), "{result}");
    assert!(result["modelUsage"]["local-model"]
        .get("estimated")
        .is_none());
}

/// One bash round then an answer, 3,000 tokens in and 300 out, in json through the OpenAI wire.
fn priced_run(ws: &TempWorkspace) -> std::process::Output {
    let server = common::lead_server([
        Step::reply(Reply::tool("bash", json!({"command": "true"})).usage(1000, 100)),
        Step::reply(Reply::text("done").usage(2000, 200)),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args([
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]));
    out
}

#[test]
fn an_unknown_model_costs_nothing_with_one_note_and_the_pricing_setting_prices_it() {
    let ws = TempWorkspace::new();
    let out = priced_run(&ws);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["total_cost_usd"], 0.0, "{result}");
    let err = stderr(&out);
    assert_eq!(
        err.matches("no price known for model `local-model`")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("\"pricing\""), "{err}");

    // USD per million tokens: 3000 in at 2, 300 out at 10, no cache tokens.
    ws.write(
        ".claude/settings.json",
        r#"{"pricing": {"local-model": {"input": 2, "output": 10, "cache_read": 0.2, "cache_write": 2.5}}}"#,
    );
    let out = priced_run(&ws);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    let expected = (3000.0 * 2.0 + 300.0 * 10.0) / 1_000_000.0;
    let cost = result["total_cost_usd"].as_f64().unwrap_or(-1.0);
    assert!(
        (cost - expected).abs() < 1e-12,
        "{cost} != {expected}: {result}"
    );
    let model_cost = result["modelUsage"]["local-model"]["costUSD"]
        .as_f64()
        .unwrap_or(-1.0);
    assert!((model_cost - expected).abs() < 1e-12, "{result}");
    assert!(!stderr(&out).contains("no price known"), "{}", stderr(&out));

    // A price that is not one is refused, naming the key.
    ws.write(
        ".claude/settings.json",
        r#"{"pricing": {"local-model": {"input": -2, "output": 10}}}"#,
    );
    // Refused before any model call: the server is never asked.
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "go"]));
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "pricing.local-model.input");
}

/// Runs a headless prompt whose model calls bash, then write_file, then answers; returns the
/// result object. Without `Bash` and `Edit` allowed, headless runs refuse both calls.
fn allowed_run(args: &[&str]) -> Value {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "echo hi"})),
        Step::tool("write_file", json!({"path": "b.txt", "content": "beta"})),
        Step::text("done"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(args));
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let first = &server.requests_for("lead")[0];
    // The prompt stayed the prompt.
    assert!(first.all_text().contains("the prompt"), "{args:?}");
    let result = result_json(&out);
    assert_eq!(result["result"], "done", "{result}");
    result
}

/// The names of the tools a run refused.
fn denied_tools(result: &Value) -> Vec<String> {
    result["permission_denials"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|x| x["tool_name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn allowed_tools_takes_space_separated_rules_before_and_after_the_prompt() {
    let after = [
        "-p",
        "the prompt",
        "--output-format",
        "json",
        "--allowedTools",
        "Bash",
        "Read",
        "Edit",
    ];
    let before = [
        "--allowedTools",
        "Bash(echo *)",
        "Edit",
        "-p",
        "the prompt",
        "--output-format",
        "json",
    ];
    for args in [&after[..], &before[..]] {
        let result = allowed_run(args);
        assert_eq!(
            result["permission_denials"],
            json!([]),
            "{args:?}: {result}"
        );
    }
    // The list ends at the prompt: only Bash is allowed, and the write is refused.
    let result = allowed_run(&[
        "--output-format",
        "json",
        "-p",
        "--allowedTools",
        "Bash",
        "the prompt",
    ]);
    assert_eq!(denied_tools(&result), ["Write"], "{result}");
    // --disallowedTools too, with a rule holding spaces as one argument: the echo is refused
    // whatever the mode allows, the write is not.
    let result = allowed_run(&[
        "-p",
        "the prompt",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
        "--disallowedTools",
        "Read(secret/**)",
        "Bash(echo *)",
    ]);
    assert_eq!(denied_tools(&result), ["Bash"], "{result}");
}
