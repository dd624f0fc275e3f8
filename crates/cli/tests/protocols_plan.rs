//! Team protocols end to end, plan approval gate: rejected and approved plans, and a
//! pending plan surviving a restart, through the real binary with scripted models. Every agent's
//! script is reactive — it decides from the conversation it is sent — so the tests do not depend
//! on how the agents' turns interleave.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{run, stderr, troupe};
use protocol_support::{
    calls, has_mail, headless, member, requests, results_of, spawn, store, unanswered,
};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use troupe_protocol::{Request, RequestKind, RequestStatus};
use troupe_store::RequestFilter;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

#[tokio::test]
async fn bob_in_plan_mode_cannot_write_and_a_rejected_plan_changes_nothing() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("bob", "Refactor the auth module (risky).", true),
            ),
            "lead" => match unanswered(rec, "plan_approval_request", "review_plan") {
                Some(id) => Reply::tool(
                    "review_plan",
                    json!({"request_id": id, "approve": false, "feedback": "too risky: keep the public API"}),
                ),
                None => Reply::text("ok"),
            },
            "bob" => {
                let writes = calls(rec, "write_file").len();
                let rejected = has_mail(rec, "plan_approval_response", "lead");
                if writes == 0 {
                    Reply::tool("write_file", json!({"path": "auth.rs", "content": "rewritten"}))
                } else if calls(rec, "submit_plan").is_empty() {
                    Reply::tool("submit_plan", json!({"plan": "Rewrite auth.rs from scratch."}))
                } else if rejected && writes == 1 {
                    Reply::tool("write_file", json!({"path": "auth.rs", "content": "anyway"}))
                } else {
                    Reply::text("waiting for the lead")
                }
            }
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    assert!(
        !ws.exists("auth.rs"),
        "bob wrote a file without an approved plan"
    );
    let last = server.requests_for("bob").pop().unwrap();
    assert!(last.system().contains("plan mode"), "{}", last.system());
    assert!(last.tool_names().contains(&"submit_plan".to_string()));
    let writes = results_of(&last, "write_file");
    assert_eq!(writes.len(), 2, "both attempts reached the gate");
    for (text, is_error) in &writes {
        assert!(*is_error && text.contains("submit_plan"), "{text}");
    }
    assert!(last.all_text().contains("too risky: keep the public API"));
    let plans = requests(ws.path(), RequestKind::Plan).await;
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Rejected);
    assert_eq!(plans[0].from, "bob");
    let bob = member(ws.path(), "bob").await;
    assert!(bob.require_plan && !bob.plan_approved);
}

#[tokio::test]
async fn charlie_plan_approved_then_his_change_is_on_disk() {
    charlie_plans_with("submit_plan").await;
}

#[tokio::test]
async fn a_teammates_exit_plan_mode_is_its_plan_request_to_the_lead() {
    charlie_plans_with("exit_plan_mode").await;
}

async fn charlie_plans_with(tool: &'static str) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(move |rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("charlie", "Add a greeting file.", true),
            ),
            "lead" => match unanswered(rec, "plan_approval_request", "review_plan") {
                Some(id) => Reply::tool("review_plan", json!({"request_id": id, "approve": true})),
                None => Reply::text("ok"),
            },
            "charlie" if calls(rec, tool).is_empty() => Reply::tool(
                tool,
                json!({"plan": "Create greeting.txt containing hello."}),
            ),
            "charlie"
                if has_mail(rec, "plan_approval_response", "lead")
                    && calls(rec, "write_file").is_empty() =>
            {
                Reply::tool(
                    "write_file",
                    json!({"path": "greeting.txt", "content": "hello"}),
                )
            }
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    assert_eq!(ws.read("greeting.txt"), "hello");
    let charlie = member(ws.path(), "charlie").await;
    assert!(charlie.require_plan && charlie.plan_approved);
    let plans = requests(ws.path(), RequestKind::Plan).await;
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Approved);
    let last = server.requests_for("charlie").pop().unwrap();
    assert!(!results_of(&last, "write_file")[0].1);
}

/// Waits (polling the store, not timing anything) until a plan request is pending.
async fn wait_for_pending_plan(ws: &Path) -> Request {
    troupe_testkit::wait_for_async(
        "a plan request to be opened",
        Duration::from_secs(60),
        async || {
            let s = troupe_store::file::open(&ws.join(".troupe"), "default").ok()?;
            s.list_requests(&RequestFilter {
                status: Some(RequestStatus::Pending),
                kind: Some(RequestKind::Plan),
                agent: None,
            })
            .await
            .unwrap_or_default()
            .into_iter()
            .next()
        },
    )
    .await
}

#[tokio::test]
async fn pending_plan_survives_a_restart_and_can_then_be_approved() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let approve_now = rec.all_text().contains("APPROVE-NOW");
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("bob", "Write plan.txt once your plan is approved.", true),
            ),
            "lead" if approve_now && calls(rec, "list_requests").is_empty() => {
                Reply::tool("list_requests", json!({"status": "pending"}))
            }
            "lead" if approve_now && calls(rec, "review_plan").is_empty() => {
                let (table, _) = results_of(rec, "list_requests").pop().unwrap();
                let id = table
                    .lines()
                    .nth(1)
                    .and_then(|l| l.split_whitespace().next())
                    .unwrap()
                    .to_string();
                Reply::tool("review_plan", json!({"request_id": id, "approve": true}))
            }
            "bob" if calls(rec, "submit_plan").is_empty() => {
                Reply::tool("submit_plan", json!({"plan": "Write plan.txt."}))
            }
            "bob"
                if has_mail(rec, "plan_approval_response", "lead")
                    && calls(rec, "write_file").is_empty() =>
            {
                Reply::tool("write_file", json!({"path": "plan.txt", "content": "done"}))
            }
            _ => Reply::text("waiting"),
        };
        Step::reply(step)
    });
    // First process: killed (SIGKILL) while the plan waits for review.
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "start", "--permission-mode", "acceptEdits"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pending = wait_for_pending_plan(ws.path()).await;
    child.kill().unwrap();
    child.wait().unwrap();

    // On disk, from another terminal, it is still pending.
    let listed = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args(["team", "requests", "--status", "pending"]));
    assert!(listed.status.success(), "{}", stderr(&listed));
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        table.contains(&pending.id) && table.contains("plan"),
        "{table}"
    );

    // Second process: the lead continues, bob is respawned from his transcript.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "APPROVE-NOW the pending plan",
        "--continue",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        "--team-timeout",
        "120",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let after = store(ws.path())
        .get_request(&pending.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.status, RequestStatus::Approved);
    assert_eq!(ws.read("plan.txt"), "done");
    assert!(member(ws.path(), "bob").await.plan_approved);
}
