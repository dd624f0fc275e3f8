//! The team seen from the REPL and from another terminal, through the binary: `team log` with
//! the teammates' tool calls, one timestamp a line and `--agent`; `team tail NAME` following a
//! transcript live; names not on the team refused with the member list; `/team` in the REPL
//! showing the status view (the lead's row included).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, repl, stderr, subcommand};
use serde_json::json;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

/// A headless run in which the lead spawns alice (who runs `echo from-alice`) and bob (who
/// only answers), and waits for both.
fn team_that_worked(ws: &TempWorkspace, server: &FakeServer) {
    common::ack_fallback(server);
    server.script(
        "lead",
        [
            Step::reply(
                Reply::tool(
                    "spawn_teammate",
                    json!({"name": "alice", "role": "coder", "prompt": "run it"}),
                )
                .with_tool(
                    "spawn_teammate",
                    json!({"name": "bob", "role": "tester", "prompt": "wait"}),
                ),
            ),
            Step::text("spawned"),
        ],
    );
    server.script(
        "alice",
        [
            Step::tool("bash", json!({"command": "echo from-alice"})),
            Step::text("alice done"),
        ],
    );
    server.script("bob", [Step::text("bob done")]);
    let out = headless_bypass(ws.path(), server, "build it", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
}

/// Whether `line` starts with exactly one `HH:MM:SS.mmm` time.
fn one_timestamp(line: &str) -> bool {
    let is_time = |s: &str| {
        let b = s.as_bytes();
        b.len() >= 12
            && b[2] == b':'
            && b[5] == b':'
            && b[8] == b'.'
            && [0, 1, 3, 4, 6, 7, 9, 10, 11]
                .iter()
                .all(|&i| b[i].is_ascii_digit())
    };
    is_time(line) && !is_time(line.get(13..).unwrap_or(""))
}

#[test]
fn team_log_shows_tool_calls_with_one_timestamp_and_filters_by_agent() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    team_that_worked(&ws, &server);

    let out = subcommand(ws.path(), &["team", "log"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains(" alice tool_called: bash(echo from-alice)")),
        "{text}"
    );
    for line in text.lines() {
        assert!(one_timestamp(line), "one timestamp a line: {line:?}");
    }

    let out = subcommand(ws.path(), &["team", "log", "--agent", "alice"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    common::assert_contains(&text, "tool_called: bash(echo from-alice)");
    assert!(text.lines().count() > 1);
    for line in text.lines() {
        assert_eq!(line.split(' ').nth(1), Some("alice"), "{line}");
    }
}

#[test]
fn a_name_not_on_the_team_is_an_error_listing_the_members() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    team_that_worked(&ws, &server);
    for args in [
        &["team", "inbox", "zed"][..],
        &["team", "send", "zed", "hello"],
        &["team", "log", "--agent", "zed"],
        &["team", "tail", "zed"],
        &["team", "stop", "zed"],
        &["team", "tail", "lead"],
    ] {
        let out = subcommand(ws.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            // Teammates spawned by one response join side by side: their order is not fixed.
            err.contains("Members: lead (lead), ")
                && err.contains("alice (coder")
                && err.contains("bob (tester"),
            "{args:?}: {err}"
        );
    }
    // The lead is on every team: its inbox is a fair question.
    let out = subcommand(ws.path(), &["team", "inbox", "lead"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!ws.join(".troupe/teams/default/inbox/zed.jsonl").exists());
}

#[test]
fn team_tail_shows_a_transcript_and_follows_it_live() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    team_that_worked(&ws, &server);

    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws.path())
        .args(["team", "tail", "alice"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let wait_for = |needle: &str, seen: &mut Vec<String>| {
        while !seen.iter().any(|l: &String| l.contains(needle)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no line with {needle:?}; saw {seen:?}"),
            }
        }
    };
    wait_for("alice ⏺ bash(echo from-alice)", &mut seen);
    wait_for("from-alice", &mut seen);
    wait_for("alice: alice done", &mut seen);

    // A line written now appears: the tail follows the transcript.
    let path = ws.join(".troupe/teams/default/transcripts/alice.jsonl");
    let entry = json!({"type": "message", "ts": 0, "message": {"role": "assistant", "content": [{"type": "text", "text": "written after the tail started"}]}});
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, format!("{entry}\n").as_bytes()).unwrap();
    drop(file);
    wait_for("written after the tail started", &mut seen);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn repl_team_shows_the_status_view_with_the_lead_row() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    team_that_worked(&ws, &server);
    let out = repl(ws.path(), &server, &[], "/team\n/exit\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("NAME") && l.contains("STATUS")),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("lead ")),
        "a lead row: {text}"
    );
    assert!(lines.iter().any(|l| l.starts_with("alice ")), "{text}");
}
