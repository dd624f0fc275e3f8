//! Team protocols end to end, permission escalation: a teammate's tool call waits for
//! the lead's (or the user's) answer, through the real binary with scripted models. Every agent's
//! script is reactive — it decides from the conversation it is sent — so the tests do not depend
//! on how the agents' turns interleave.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use protocol_support::{answered, calls, headless, mails, requests, results_of, spawn};
use serde_json::json;
use troupe_protocol::{RequestKind, RequestStatus};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

#[tokio::test]
async fn teammate_tool_call_waits_for_the_leads_permission() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Touch two files.", false))
            }
            "lead" => {
                let done = answered(rec, "review_permission");
                let open = mails(rec).into_iter().find(|m| {
                    m.kind == "permission_request"
                        && m.request_id.as_ref().is_some_and(|id| !done.contains(id))
                });
                match open {
                    Some(m) => {
                        let ok = m.body.contains("perm-ok");
                        Reply::tool(
                            "review_permission",
                            json!({"request_id": m.request_id, "approve": ok, "reason": if ok { "fine" } else { "not that one" }}),
                        )
                    }
                    None => Reply::text("ok"),
                }
            }
            "alice" => match calls(rec, "bash").len() {
                0 => Reply::tool("bash", json!({"command": "touch perm-ok.txt"})),
                1 => Reply::tool("bash", json!({"command": "touch perm-no.txt"})),
                _ => Reply::text("done"),
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "default", &[]);

    assert!(ws.exists("perm-ok.txt"));
    assert!(!ws.exists("perm-no.txt"));
    let last = server.requests_for("alice").pop().unwrap();
    let bash = results_of(&last, "bash");
    assert!(!bash[0].1, "{:?}", bash[0]);
    assert!(
        bash[1].1 && bash[1].0.contains("not that one"),
        "{:?}",
        bash[1]
    );
    let perms = requests(ws.path(), RequestKind::Permission).await;
    let statuses: Vec<RequestStatus> = perms.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RequestStatus::Approved, RequestStatus::Rejected]);
    assert!(perms.iter().all(|r| r.from == "alice" && r.to == "lead"));
}

#[tokio::test]
async fn user_answers_teammate_permissions_when_configured_and_headless_has_no_user() {
    let ws = TempWorkspace::new();
    ws.write(
        ".troupe/settings.json",
        r#"{"teammate_permissions": "user"}"#,
    );
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Touch a file.", false))
            }
            "alice" if calls(rec, "bash").is_empty() => {
                Reply::tool("bash", json!({"command": "touch asked.txt"}))
            }
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "default", &[]);

    assert!(!ws.exists("asked.txt"));
    // The question never went to the lead model; the record says the lead's side refused.
    assert!(server
        .requests_for("lead")
        .iter()
        .all(|r| !mails(r).iter().any(|m| m.kind == "permission_request")));
    let perms = requests(ws.path(), RequestKind::Permission).await;
    assert_eq!(perms.len(), 1);
    assert_eq!(perms[0].status, RequestStatus::Rejected);
}
