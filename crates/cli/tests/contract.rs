//! troupe's headless output next to Claude Code's, field by field: the same scripted session
//! (crates/testkit/src/contract.rs) run through both; Claude Code's output was recorded once by
//! `scripts/record-claude-code.sh` into tests/fixtures/claude-code/. What must differ is
//! named: ids, uuids, timestamps, durations and costs (values, not presence or type), the
//! tools list, and Claude Code's extra fields (troupe has nothing they could say).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use serde_json::Value;
use std::path::Path;
use troupe_testkit::{FakeServer, TempWorkspace, Wire};

/// The model the recording used, passed to troupe so the `model` fields can be compared.
const MODEL: &str = "claude-opus-5-5";

/// Every field of each event that Claude Code's headless contract (and the Agent SDK's parser)
/// relies on, as paths into the event.
fn contract_fields(event: &Value) -> &'static [&'static str] {
    match (event["type"].as_str(), event["subtype"].as_str()) {
        (Some("system"), Some("init")) => &[
            "type",
            "subtype",
            "cwd",
            "session_id",
            "tools",
            "mcp_servers",
            "model",
            "permissionMode",
            "slash_commands",
            "apiKeySource",
            "claude_code_version",
            "output_style",
            "agents",
            "skills",
            "uuid",
        ],
        (Some("assistant"), _) => &[
            "type",
            "message/id",
            "message/type",
            "message/role",
            "message/model",
            "message/content",
            "message/stop_reason",
            "message/stop_sequence",
            "message/usage",
            "message/usage/input_tokens",
            "message/usage/output_tokens",
            "message/usage/cache_read_input_tokens",
            "message/usage/cache_creation_input_tokens",
            "parent_tool_use_id",
            "session_id",
            "uuid",
        ],
        (Some("user"), _) => &[
            "type",
            "message/role",
            "message/content",
            "parent_tool_use_id",
            "session_id",
            "uuid",
            "tool_use_result",
        ],
        (Some("result"), _) => &[
            "type",
            "subtype",
            "is_error",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "result",
            "stop_reason",
            "session_id",
            "total_cost_usd",
            "usage",
            "modelUsage",
            "permission_denials",
            "api_error_status",
            "terminal_reason",
            "ttft_ms",
            "usage/server_tool_use",
            "usage/server_tool_use/web_search_requests",
            "usage/service_tier",
            "usage/cache_creation",
            "usage/cache_creation/ephemeral_5m_input_tokens",
            "usage/cache_creation/ephemeral_1h_input_tokens",
            "uuid",
        ],
        _ => &["type"],
    }
}

/// Fields whose values must match exactly (the rest must only be present with the same type).
const SAME_VALUE: &[&str] = &[
    "type",
    "subtype",
    "model",
    "message/type",
    "message/role",
    "message/model",
    "message/stop_sequence",
    "parent_tool_use_id",
    "is_error",
    "num_turns",
    "stop_reason",
    "permission_denials",
    "api_error_status",
    "terminal_reason",
    "usage/server_tool_use",
    "usage/service_tier",
    "mcp_servers",
    "permissionMode",
    "output_style",
    "message/usage/input_tokens",
    "message/usage/cache_read_input_tokens",
    "message/usage/cache_creation_input_tokens",
];

fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('/').try_fold(value, |v, key| v.get(key))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn troupe_run(format: &str, verbose: bool) -> (TempWorkspace, std::process::Output) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(troupe_testkit::contract::step);
    let mut cmd = common::troupe(ws.path(), &server, Wire::Anthropic);
    cmd.args([
        "-p",
        "--output-format",
        format,
        "--model",
        MODEL,
        "--allowedTools",
        "Bash",
    ]);
    if verbose {
        cmd.arg("--verbose");
    }
    cmd.arg("Run echo contract");
    let out = common::run(&mut cmd);
    assert!(out.status.success(), "{}", common::stderr(&out));
    (ws, out)
}

/// Compares one of troupe's events with Claude Code's at the same place.
fn compare(ours: &Value, theirs: &Value, place: usize) {
    for field in contract_fields(theirs) {
        let their = at(theirs, field)
            .unwrap_or_else(|| panic!("the fixture's event {place} lacks {field}: {theirs}"));
        let our = at(ours, field)
            .unwrap_or_else(|| panic!("troupe's event {place} lacks {field}: {ours}"));
        // Claude Code streams each block before the reply's end, so its stop_reason is null
        // there; troupe's events come after the reply and carry it.
        let streamed_early = *field == "message/stop_reason" && their.is_null();
        if !streamed_early {
            assert_eq!(
                kind(our),
                kind(their),
                "event {place} field {field}: {our} vs {their}"
            );
        }
        if SAME_VALUE.contains(field) && !streamed_early {
            assert_eq!(our, their, "event {place} field {field}");
        }
    }
    if let (Some(our), Some(their)) = (ours["result"].as_str(), theirs["result"].as_str()) {
        // troupe's shell tool adds the exit code, which the scripted model quotes back.
        let our = our.replace("\nexit code: 0", "");
        assert_eq!(our, their, "event {place}: the result text");
    }
    // The first key is `type` (Claude Code's result line is the one exception).
    let first = ours.as_object().unwrap().keys().next().unwrap();
    assert_eq!(first, "type", "event {place}: {ours}");
}

/// Content blocks compared by shape: same block types, same text, the tool's input.
fn compare_content(ours: &Value, theirs: &Value, place: usize) {
    let (Some(ours), Some(theirs)) = (
        at(ours, "message/content").and_then(Value::as_array),
        at(theirs, "message/content").and_then(Value::as_array),
    ) else {
        return;
    };
    assert_eq!(ours.len(), theirs.len(), "event {place}: content blocks");
    for (our, their) in ours.iter().zip(theirs) {
        assert_eq!(our["type"], their["type"], "event {place}");
        for key in ["input", "is_error"] {
            assert_eq!(our.get(key), their.get(key), "event {place} block {key}");
        }
        if let (Some(our), Some(their)) = (our["text"].as_str(), their["text"].as_str()) {
            // The scripted model quotes the tool's output, which has troupe's exit code line.
            assert_eq!(
                our.replace("\nexit code: 0", ""),
                their,
                "event {place}: text"
            );
        }
        if let (Some(our), Some(their)) = (our["content"].as_str(), their["content"].as_str()) {
            // troupe's shell tool ends its output with the exit code.
            assert_eq!(
                our,
                format!("{their}\nexit code: 0"),
                "event {place}: the tool's output"
            );
        }
        if their["type"] == "tool_use" {
            assert_eq!(their["name"], "Bash");
            assert_eq!(our["name"], "Bash", "Claude Code's name for the shell tool");
        }
    }
}

#[test]
fn stream_json_matches_claude_code_field_by_field() {
    let theirs: Vec<Value> = fixture("stream-json.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (_ws, out) = troupe_run("stream-json", true);
    let ours = common::json_lines(&out);
    let types = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| {
                format!(
                    "{}/{}",
                    e["type"].as_str().unwrap(),
                    e["subtype"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(
        types(&ours),
        types(&theirs),
        "the same events in the same order"
    );
    for (place, (our, their)) in ours.iter().zip(&theirs).enumerate() {
        compare(our, their, place);
        compare_content(our, their, place);
    }
    // One session id throughout, a UUID.
    let id = ours[0]["session_id"].as_str().unwrap();
    assert!(uuid_like(id), "{id}");
    assert!(ours.iter().all(|e| e["session_id"] == id));
}

#[test]
fn json_and_json_verbose_match_claude_code() {
    let their_result: Value = serde_json::from_str(fixture("json.json").trim()).unwrap();
    let (_ws, out) = troupe_run("json", false);
    let ours = common::result_json(&out);
    compare(&ours, &their_result, 0);

    // `json --verbose` is the message array, as Claude Code prints it.
    let theirs: Value = serde_json::from_str(fixture("json-verbose.json").trim()).unwrap();
    let (_ws, out) = troupe_run("json", true);
    let ours = common::result_json(&out);
    let (ours, theirs) = (ours.as_array().unwrap(), theirs.as_array().unwrap());
    assert_eq!(ours.len(), theirs.len(), "{ours:?}");
    for (place, (our, their)) in ours.iter().zip(theirs).enumerate() {
        compare(our, their, place);
    }
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36
        && id.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}
