//! Progress headless: `--verbose` puts each tool call with its result under it on stderr, and a
//! team stuck on a request nobody answers says so on stderr — who waits, for which request, and
//! the command that answers it — instead of staying silent until the team timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{run, stderr, troupe};
use protocol_support::{calls, spawn};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

#[test]
fn verbose_shows_each_call_with_its_result_under_it_on_stderr() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "echo from-the-command"})),
        Step::text("all done"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--verbose",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    common::assert_contains(&err, "⏺ bash(echo from-the-command)\n  ⎿ from-the-command");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "all done");
}

#[tokio::test]
async fn a_team_waiting_on_an_unanswered_request_says_so_on_stderr() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    // The lead never reviews alice's plan; alice waits for an answer.
    server.set_fallback(|rec| {
        let reply = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("alice", "Plan first, then write notes.txt.", true),
            ),
            "alice" if calls(rec, "submit_plan").is_empty() => {
                Reply::tool("submit_plan", json!({"plan": "Write notes.txt."}))
            }
            "alice" => Reply::text("waiting for the plan to be approved"),
            _ => Reply::text("noted"),
        };
        Step::reply(reply)
    });
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "start alice",
            "--team-timeout",
            "5",
            "--permission-mode",
            "bypassPermissions",
        ])
        .env("TROUPE_WAIT_NOTICE_MS", "300"));
    let err = stderr(&out);
    let id = protocol_support::requests(ws.path(), troupe_protocol::RequestKind::Plan)
        .await
        .into_iter()
        .next()
        .map(|r| r.id)
        .unwrap_or_else(|| panic!("alice opened no plan request: {err}"));
    assert!(
        err.contains("alice has waited")
            && err.contains(&format!("plan request {id} (addressed to lead)"))
            && err.contains(&format!("troupe team approve {id}")),
        "{err}"
    );
    assert_eq!(err.matches("has waited").count(), 1, "said once: {err}");
}
