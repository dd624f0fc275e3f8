//! `troupe team approve|reject <id> [--reason]` from another terminal, through the binary: a
//! pending plan is rejected with feedback (the teammate revises it), the revision approved
//! (the teammate proceeds), both recorded as the person's; a second answer, an unknown id and
//! a permission request answered in the lead's place behave as the request FSM says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{stderr, troupe};
use protocol_support::{calls, has_mail, mails, results_of, spawn, store};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use troupe_protocol::{Request, RequestKind, RequestStatus};
use troupe_store::RequestFilter;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// `troupe team ARGS…` in `ws` as the person "tester".
fn team(ws: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws)
        .arg("team")
        .args(args)
        .env("USER", "tester")
        .output()
        .unwrap()
}

/// Waits (bounded, polling the store) for a pending request of `kind` other than `not`.
async fn pending(ws: &Path, kind: RequestKind, not: &[String]) -> Request {
    let what = format!("a pending {kind} request");
    troupe_testkit::wait_for_async(&what, Duration::from_secs(90), async || {
        let s = troupe_store::file::open(&ws.join(".troupe"), "default").ok()?;
        s.list_requests(&RequestFilter {
            status: Some(RequestStatus::Pending),
            kind: Some(kind),
            agent: None,
        })
        .await
        .unwrap_or_default()
        .into_iter()
        .find(|r| !not.contains(&r.id))
    })
    .await
}

#[tokio::test]
async fn a_plan_rejected_then_approved_from_another_terminal() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("bob", "Add greeting.txt once your plan is approved.", true),
            ),
            "bob" => {
                let plans = calls(rec, "submit_plan").len();
                let verdicts: Vec<String> = mails(rec)
                    .into_iter()
                    .filter(|m| m.kind == "plan_approval_response" && m.from == "user:tester")
                    .map(|m| m.body)
                    .collect();
                let approved = verdicts.iter().any(|b| b.contains("was approved"));
                if plans == 0 {
                    Reply::tool("submit_plan", json!({"plan": "Create greeting.txt."}))
                } else if plans == 1 && !verdicts.is_empty() {
                    Reply::tool(
                        "submit_plan",
                        json!({"plan": "Create greeting.txt and a test for it."}),
                    )
                } else if approved && calls(rec, "write_file").is_empty() {
                    Reply::tool(
                        "write_file",
                        json!({"path": "greeting.txt", "content": "hi"}),
                    )
                } else {
                    Reply::text("waiting")
                }
            }
            _ => Reply::text("noted"),
        };
        Step::reply(step)
    });
    let lead = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--team-timeout",
            "120",
            "--permission-mode",
            "acceptEdits",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let first = pending(ws.path(), RequestKind::Plan, &[]).await;
    let out = team(ws.path(), &["reject", &first.id, "--reason", "add a test"]);
    assert!(
        out.status.success(),
        "{}\nrequests: {:#?}\nmodel calls: {:#?}",
        stderr(&out),
        store(ws.path())
            .list_requests(&RequestFilter::default())
            .await
            .unwrap_or_default(),
        server
            .journal()
            .iter()
            .map(|r| format!(
                "{} messages={} submit_plan={} last={}",
                r.agent,
                r.body["messages"].as_array().map_or(0, Vec::len),
                calls(r, "submit_plan").len(),
                r.body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(|m| m.to_string().chars().take(300).collect::<String>())
                    .unwrap_or_default()
            ))
            .collect::<Vec<_>>()
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("rejected plan request {} of bob", first.id))
            && said.contains("recorded as user:tester"),
        "{said}"
    );
    // A second answer is refused, naming where the request stands.
    let again = team(ws.path(), &["approve", &first.id]);
    assert_eq!(again.status.code(), Some(1));
    common::assert_stderr_has(&again, "already rejected");

    let second = pending(
        ws.path(),
        RequestKind::Plan,
        std::slice::from_ref(&first.id),
    )
    .await;
    let out = team(ws.path(), &["approve", &second.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let finished = lead.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", stderr(&finished));

    assert_eq!(ws.read("greeting.txt"), "hi");
    let s = store(ws.path());
    let first = s.get_request(&first.id).await.unwrap().unwrap();
    assert_eq!(first.status, RequestStatus::Rejected);
    let no = first.response.unwrap();
    assert_eq!(
        (no.by.as_str(), no.reason.as_deref()),
        ("user:tester", Some("add a test"))
    );
    assert_eq!(first.history[0].by, "user:tester");
    let second = s.get_request(&second.id).await.unwrap().unwrap();
    assert_eq!(second.status, RequestStatus::Approved);
    assert_eq!(second.response.unwrap().by, "user:tester");
    assert!(s.roster().await.unwrap().get("bob").unwrap().plan_approved);
    // Bob read the feedback; the lead was told both times that the person answered for it.
    let bob = server.requests_for("bob").pop().unwrap();
    assert!(
        bob.all_text().contains("Feedback: add a test"),
        "{}",
        bob.all_text()
    );
    let lead_saw = server.requests_for("lead").pop().unwrap().all_text();
    common::assert_contains(&lead_saw, "user:tester rejected bob's plan");
    common::assert_contains(&lead_saw, "user:tester approved bob's plan");
}

#[tokio::test]
async fn a_permission_request_refused_in_the_leads_place() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("carol", "Write notes.txt.", false))
            }
            "carol" if calls(rec, "write_file").is_empty() => {
                Reply::tool("write_file", json!({"path": "notes.txt", "content": "x"}))
            }
            "carol" => Reply::text("could not write"),
            _ => Reply::text("noted"),
        };
        Step::reply(step)
    });
    // In default mode a teammate's edit asks, and the question goes to the lead (who never
    // answers here): the person answers it instead.
    let lead = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--team-timeout",
            "120",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let asked = pending(ws.path(), RequestKind::Permission, &[]).await;
    let out = team(
        ws.path(),
        &["reject", &asked.id, "--reason", "not in this repo"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let finished = lead.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", stderr(&finished));

    assert!(!ws.exists("notes.txt"));
    let carol = server.requests_for("carol").pop().unwrap();
    let (text, is_error) = results_of(&carol, "write_file").pop().unwrap();
    assert!(is_error && text.contains("not in this repo"), "{text}");
    assert!(has_mail(&carol, "permission_response", "user:tester"));
    let r = store(ws.path())
        .get_request(&asked.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, RequestStatus::Rejected);
    assert_eq!(r.response.unwrap().by, "user:tester");
}

#[test]
fn an_unknown_request_id_is_an_error() {
    let ws = TempWorkspace::new();
    let created = common::subcommand(ws.path(), &["task", "create", "x"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let out = team(ws.path(), &["approve", "01JNOSUCHREQUEST"]);
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "unknown request id");
}

#[tokio::test]
async fn a_shutdown_approved_in_the_teammates_place_ends_it() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("bob", "Stand by.", false))
            }
            "lead" if calls(rec, "shutdown_request").is_empty() => Reply::tool(
                "shutdown_request",
                json!({"teammate": "bob", "reason": "done"}),
            ),
            // Bob never answers the request himself.
            "bob" => Reply::text("busy"),
            _ => Reply::text("noted"),
        };
        Step::reply(step)
    });
    let lead = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--team-timeout",
            "120",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let asked = pending(ws.path(), RequestKind::Shutdown, &[]).await;
    let out = team(ws.path(), &["approve", &asked.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let finished = lead.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", stderr(&finished));

    let s = store(ws.path());
    let bob = s.roster().await.unwrap().get("bob").cloned().unwrap();
    assert_eq!(bob.status, troupe_protocol::AgentStatus::Shutdown);
    let r = s.get_request(&asked.id).await.unwrap().unwrap();
    assert_eq!(r.status, RequestStatus::Approved);
    assert_eq!(r.response.unwrap().by, "user:tester");
    let lead_saw = server.requests_for("lead").pop().unwrap().all_text();
    common::assert_contains(&lead_saw, "in the place of bob; it has been shut down");
}
