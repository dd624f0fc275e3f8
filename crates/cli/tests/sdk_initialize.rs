//! The fields of the Agent SDKs' `initialize` request that shape the lead, sent as the
//! TypeScript SDK sends them (raw stream-json on stdin): `systemPrompt` and
//! `appendSystemPrompt` reach the system prompt, `agents` the `task` tool and init's list.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::troupe;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

#[test]
fn initialize_fields_shape_the_lead() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("shaped")]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let initialize = json!({"type": "control_request", "request_id": "init_1", "request": {
        "subtype": "initialize",
        "systemPrompt": "You are the TS-PROMPT agent.",
        "appendSystemPrompt": "APPENDED-MARK: answer briefly.",
        "agents": {"reviewer": {"description": "Reviews diffs", "prompt": "You review.", "tools": ["Read"]}},
    }});
    writeln!(stdin, "{initialize}").unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen: Vec<Value> = Vec::new();
    let mut next = |seen: &mut Vec<Value>| -> Value {
        let line = lines.next().expect("a line").unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        seen.push(value.clone());
        value
    };
    let answer = loop {
        let v = next(&mut seen);
        if v["type"] == "control_response" {
            break v;
        }
    };
    assert_eq!(answer["response"]["subtype"], "success", "{answer}");
    assert_eq!(
        answer["response"]["response"]["agents"],
        json!(["reviewer"])
    );
    writeln!(
        stdin,
        "{}",
        json!({"type": "user", "message": {"role": "user", "content": "hello"}})
    )
    .unwrap();
    let result = loop {
        let v = next(&mut seen);
        if v["type"] == "result" {
            break v;
        }
    };
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(result["result"], "shaped");
    let init = seen.iter().find(|v| v["subtype"] == "init").unwrap();
    assert_eq!(init["agents"], json!(["reviewer"]));
    let request = &server.journal()[0];
    let system = request.system();
    assert!(system.contains("You are the TS-PROMPT agent."), "{system}");
    common::assert_contains(&system, "APPENDED-MARK: answer briefly.");
    let task = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .unwrap();
    assert!(
        task["description"].as_str().unwrap().contains("reviewer"),
        "{task}"
    );
}
