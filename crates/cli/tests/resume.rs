//! A run killed with SIGKILL in the middle of a tool call resumes cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::json;
use std::time::{Duration, Instant};
use troupe_protocol::ContentBlock;
use troupe_testkit::{Reply, Step, TempWorkspace, Wire};

#[test]
fn sigkill_mid_turn_then_continue_closes_the_dangling_tool_call() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "sleep 30"})),
        Step::dynamic(|req| {
            let messages = req.messages();
            let dangling = messages
                .iter()
                .flat_map(|m| m.content.iter())
                .find_map(|b| match b {
                    ContentBlock::ToolResult {
                        content, is_error, ..
                    } => Some((content.clone(), *is_error)),
                    _ => None,
                });
            let (content, is_error) = dangling.expect("the interrupted call has a result");
            assert!(is_error && content.contains("interrupted"), "{content}");
            Reply::text("resumed cleanly")
        }),
    ]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "sleep", "--permission-mode", "bypassPermissions"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the tool_use is persisted (the bash call is running), then kill hard.
    let sessions = ws.path().join(".troupe/sessions");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let persisted = std::fs::read_dir(&sessions)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .contains("tool_use")
            })
            .unwrap_or(false);
        if persisted {
            break;
        }
        assert!(Instant::now() < deadline, "the tool call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go on",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "resumed cleanly");
    let second = server.requests_for("lead").pop().unwrap();
    let texts: Vec<String> = second.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts.first().map(String::as_str), Some("sleep"));
    assert!(texts.last().unwrap().contains("go on"));
}

/// Appends `bytes` to the only session transcript of `ws`.
fn tear_session(ws: &TempWorkspace, bytes: &[u8]) {
    use std::io::Write;
    let sessions = ws.path().join(".troupe/sessions");
    let path = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("the first run wrote a session transcript");
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .unwrap();
}

#[test]
fn continue_works_when_the_transcript_ends_inside_a_multibyte_character() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::text("première réponse"),
        Step::dynamic(|req| {
            let texts: Vec<String> = req.messages().iter().map(|m| m.text()).collect();
            assert_eq!(texts.first().map(String::as_str), Some("bonjour"));
            assert!(texts.iter().any(|t| t == "première réponse"), "{texts:?}");
            Reply::text("suite")
        }),
        Step::dynamic(|req| {
            let texts: Vec<String> = req.messages().iter().map(|m| m.text()).collect();
            assert!(texts.iter().any(|t| t == "suite"), "{texts:?}");
            Reply::text("third run sees the second")
        }),
    ]);
    let first = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "bonjour"]));
    assert!(first.status.success(), "stderr: {}", stderr(&first));
    // A full disk kept only the first byte of `è` (0xC3 0xA8) of the next line.
    tear_session(
        &ws,
        b"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"derni\xc3",
    );
    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "encore",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    assert_eq!(result_json(&second)["result"], "suite");
    assert!(
        stderr(&second).contains("skipping corrupt transcript line"),
        "the torn line is reported: {}",
        stderr(&second)
    );
    // The line written after the torn one is whole: a third run reads it.
    let third = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "et après",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(third.status.success(), "stderr: {}", stderr(&third));
    assert_eq!(result_json(&third)["result"], "third run sees the second");
}
