//! MCP sessions through the real binary against the reference servers: call timeouts and
//! cancellation, servers shared by a team, `/mcp` and Ctrl-C in the REPL.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod mcp_support;

use common::{repl, result_json, stderr, troupe};
use mcp_support::*;

#[test]
fn a_slow_call_times_out_and_is_cancelled_on_the_server() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    // The lead's last model call waits (bounded) until the server noted the cancellation,
    // which troupe sent when the call timed out: the run's end kills the server at once, and
    // on a busy machine that could come first.
    let noted_log = log.clone();
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::tool("mcp__fx__slow", json!({"ms": 600_000})),
        Step::dynamic(move |req| {
            wait_until(|| {
                std::fs::read_to_string(&noted_log)
                    .unwrap_or_default()
                    .contains("cancelled")
            });
            Reply::text(last_result(req, true))
        }),
    ]);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &[
            "--allowedTools",
            "mcp__fx",
            "--settings",
            r#"{"mcp_tool_timeout": 1}"#,
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        result_json(&out)["result"],
        "mcp__fx__slow did not answer within 1 s and was cancelled (setting mcp_tool_timeout)"
    );
    // The server heard about it: its request was cancelled, not left running.
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("cancelled"), "fixture log: {text:?}");
}

use serde_json::json;
use troupe_testkit::{mcp, FakeServer, Reply, Step, TempWorkspace, Wire};

#[test]
fn teammates_share_the_lead_process_connection() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let server = FakeServer::start();
    common::ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool("connect_mcp", json!({"name": "fx"})),
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "helper", "prompt": "echo something"}),
            ),
            Step::text("spawned"),
        ],
    );
    server.script(
        "alice",
        [
            Step::dynamic(|req| {
                assert!(req.tool_names().contains(&"mcp__fx__echo".to_string()));
                Reply::tool("mcp__fx__echo", json!({"text": "from alice"}))
            }),
            Step::dynamic(|req| Reply::text(format!("alice got {}", last_result(req, false)))),
        ],
    );
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__fx"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(server
        .requests_for("lead")
        .iter()
        .any(|r| r.all_text().contains("alice got from alice")));
    assert_eq!(
        started_pids(ws.path(), "fx").len(),
        1,
        "one connection per process"
    );
}

#[test]
fn process_mode_teammates_connect_their_own_servers() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    let config = json!({"mcpServers": {"fx": mcp::fixture(&log)}}).to_string();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        json!({"name": "bob", "role": "helper", "prompt": "echo something"}),
    );
    server.script(
        "bob",
        [
            Step::tool("connect_mcp", json!({"name": "fx"})),
            Step::tool("mcp__fx__echo", json!({"text": "from bob"})),
            Step::dynamic(|req| Reply::text(format!("bob got {}", last_result(req, false)))),
        ],
    );
    // Only --mcp-config names the server: the teammate process gets it from the lead.
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &[
            "--teammate-mode",
            "process",
            "--allowedTools",
            "mcp__fx",
            "--mcp-config",
            &config,
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(server
        .requests_for("lead")
        .iter()
        .any(|r| r.all_text().contains("bob got from bob")));
    // The lead's own connection and the teammate process's.
    assert_eq!(started_pids(ws.path(), "fx").len(), 2);
}

#[test]
fn the_repl_lists_servers_with_slash_mcp() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(
        ws.path(),
        json!({"fx": mcp::fixture(&log), "bad": {"type": "ws", "url": "http://x"}}),
    );
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::text("connected"),
    ]);
    let out = repl(ws.path(), &server, &[], "connect fx\n/mcp\n/exit\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let fx = text
        .lines()
        .find(|l| l.starts_with("fx "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(fx.contains("connected") && fx.contains("stdio"), "{text}");
    let bad = text.lines().find(|l| l.starts_with("bad ")).unwrap();
    assert!(
        bad.contains("failed") && bad.contains("unknown `type`"),
        "{text}"
    );
}

#[test]
fn ctrl_c_in_the_repl_interrupts_a_call_and_cancels_it_on_the_server() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::tool("mcp__fx__slow", json!({"ms": 600_000})),
        Step::dynamic(|req| {
            // The interrupted call was closed with an error result.
            let text = req.all_text();
            assert!(text.contains("interrupted"), "{text}");
            Reply::text("still here")
        }),
    ]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["--allowedTools", "mcp__fx"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"take your time\n").unwrap();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        wait_until(|| read_log().contains("started")),
        "the slow call never started"
    );
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    assert!(
        wait_until(|| read_log().contains("cancelled")),
        "log: {}",
        read_log()
    );
    stdin.write_all(b"are you there?\n/exit\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(interrupted)") && text.contains("still here"),
        "{text}"
    );
}
