//! Team protocols end to end, shutdown handshake: approval, rejection, correlation,
//! stale incarnations, protocol errors and `team stop`, through the real binary with scripted
//! models. Every agent's script is reactive — it decides from the conversation it is sent — so
//! the tests do not depend on how the agents' turns interleave.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{run, stderr, troupe};
use protocol_support::{
    answered, calls, has_mail, headless, mails, member, request_ids, requests, results_of, spawn,
    store, unanswered,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use troupe_protocol::{AgentStatus, RequestKind, RequestStatus};
use troupe_testkit::{FakeServer, Fault, Reply, Step, TempWorkspace, Wire};

#[tokio::test]
async fn alice_approves_shutdown_and_her_loop_ends() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
            }
            "lead"
                if has_mail(rec, "task_result", "alice")
                    && calls(rec, "shutdown_request").is_empty() =>
            {
                Reply::tool(
                    "shutdown_request",
                    json!({"teammate": "alice", "reason": "work is done"}),
                )
            }
            "alice" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(id) => Reply::tool(
                    "shutdown_response",
                    json!({"request_id": id, "approve": true}),
                ),
                None => Reply::text("ready"),
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    let alice = member(ws.path(), "alice").await;
    assert_eq!(alice.status, AgentStatus::Shutdown);
    // Her loop ended: "ready", then the approving call, and no model call after it.
    let calls_made = server.requests_for("alice");
    assert_eq!(calls_made.len(), 2);
    assert!(calls_made[1].all_text().contains("work is done"));
    let shutdowns = requests(ws.path(), RequestKind::Shutdown).await;
    assert_eq!(shutdowns.len(), 1);
    let r = &shutdowns[0];
    assert_eq!(r.status, RequestStatus::Approved);
    assert_eq!(
        (r.from.as_str(), r.to.as_str(), r.to_epoch),
        ("lead", "alice", 1)
    );
    assert_eq!(r.response.as_ref().map(|a| a.by.as_str()), Some("alice"));
    // The lead was told, with the request id.
    let lead_last = server.requests_for("lead").pop().unwrap();
    assert!(mails(&lead_last)
        .iter()
        .any(|m| m.kind == "shutdown_response"
            && m.request_id.as_deref() == Some(r.id.as_str())
            && m.body.contains("approved")));
    // Every transition is an event.
    let events = store(ws.path())
        .read_events(troupe_store::EventCursor::START)
        .await
        .unwrap()
        .events;
    let kinds: Vec<String> = events
        .iter()
        .filter(|e| e.detail.contains(&r.id))
        .map(|e| e.kind.as_str().to_string())
        .collect();
    assert!(kinds.contains(&"request_opened".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"request_resolved".to_string()), "{kinds:?}");
}

#[tokio::test]
async fn busy_teammate_rejects_shutdown_then_approves_when_asked_again() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Migrate the schema.", false))
            }
            "lead" => {
                let asked = calls(rec, "shutdown_request").len();
                let rejected = mails(rec)
                    .iter()
                    .any(|m| m.kind == "shutdown_response" && m.body.contains("rejected"));
                if asked == 0 && has_mail(rec, "task_result", "alice") {
                    Reply::tool("shutdown_request", json!({"teammate": "alice"}))
                } else if asked == 1 && rejected {
                    Reply::tool(
                        "shutdown_request",
                        json!({"teammate": "alice", "reason": "asking again later"}),
                    )
                } else {
                    Reply::text("ok")
                }
            }
            "alice" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(id) if answered(rec, "shutdown_response").is_empty() => Reply::tool(
                    "shutdown_response",
                    json!({"request_id": id, "approve": false, "reason": "busy: halfway through the migration"}),
                ),
                Some(id) => Reply::tool(
                    "shutdown_response",
                    json!({"request_id": id, "approve": true}),
                ),
                None => Reply::text("migrating"),
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    let shutdowns = requests(ws.path(), RequestKind::Shutdown).await;
    assert_eq!(shutdowns.len(), 2);
    assert_eq!(shutdowns[0].status, RequestStatus::Rejected);
    assert_eq!(
        shutdowns[0]
            .response
            .as_ref()
            .and_then(|r| r.reason.as_deref()),
        Some("busy: halfway through the migration")
    );
    assert_eq!(shutdowns[1].status, RequestStatus::Approved);
    assert_eq!(
        member(ws.path(), "alice").await.status,
        AgentStatus::Shutdown
    );
    let lead_text: String = server
        .requests_for("lead")
        .iter()
        .map(|r| r.all_text())
        .collect();
    assert!(lead_text.contains("busy: halfway through the migration"));
}

#[tokio::test]
async fn two_shutdowns_answered_in_reverse_order_correlate() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
                    .with_tool("spawn_teammate", spawn("bob", "Say ready.", false))
            }
            "lead"
                if calls(rec, "shutdown_request").is_empty()
                    && has_mail(rec, "task_result", "alice")
                    && has_mail(rec, "task_result", "bob") =>
            {
                Reply::tool("shutdown_request", json!({"teammate": "alice"}))
                    .with_tool("shutdown_request", json!({"teammate": "bob"}))
            }
            "lead"
                if has_mail(rec, "shutdown_response", "bob")
                    && calls(rec, "send_message").is_empty() =>
            {
                Reply::tool("send_message", json!({"to": "alice", "content": "go ahead"}))
            }
            "alice" | "bob" => {
                let go = rec.agent == "bob" || mails(rec).iter().any(|m| m.body.contains("go ahead"));
                match unanswered(rec, "shutdown_request", "shutdown_response") {
                    Some(id) if go => Reply::tool(
                        "shutdown_response",
                        json!({"request_id": id, "approve": true, "reason": format!("{} done", rec.agent)}),
                    ),
                    _ => Reply::text("ready"),
                }
            }
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    let shutdowns = requests(ws.path(), RequestKind::Shutdown).await;
    assert_eq!(shutdowns.len(), 2);
    let to_alice = shutdowns.iter().find(|r| r.to == "alice").unwrap();
    let to_bob = shutdowns.iter().find(|r| r.to == "bob").unwrap();
    assert!(
        to_alice.created_at <= to_bob.created_at,
        "alice was asked first"
    );
    for (r, who) in [(to_alice, "alice"), (to_bob, "bob")] {
        assert_eq!(r.status, RequestStatus::Approved);
        let answer = r.response.as_ref().unwrap();
        assert_eq!(answer.by, who);
        assert_eq!(
            answer.reason.as_deref(),
            Some(format!("{who} done").as_str())
        );
    }
    let (a_at, b_at) = (
        to_alice.response.as_ref().unwrap().at,
        to_bob.response.as_ref().unwrap().at,
    );
    assert!(b_at <= a_at, "bob answered first");
    // Each response mail the lead received carries its own request's id.
    let lead_last = server.requests_for("lead").pop().unwrap();
    for m in mails(&lead_last)
        .iter()
        .filter(|m| m.kind == "shutdown_response")
    {
        let expected = if m.from == "alice" {
            &to_alice.id
        } else {
            &to_bob.id
        };
        assert_eq!(m.request_id.as_ref(), Some(expected), "{m:?}");
    }
    assert_eq!(
        member(ws.path(), "alice").await.status,
        AgentStatus::Shutdown
    );
    assert_eq!(member(ws.path(), "bob").await.status, AgentStatus::Shutdown);
}

#[tokio::test]
async fn a_request_to_alices_previous_incarnation_does_not_stop_the_new_alice() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
            }
            "lead"
                if calls(rec, "shutdown_request").is_empty()
                    && has_mail(rec, "task_result", "alice") =>
            {
                Reply::tool("shutdown_request", json!({"teammate": "alice"}))
            }
            "lead"
                if calls(rec, "spawn_teammate").len() == 1
                    && mails(rec).iter().any(|m| m.body.contains("failed")) =>
            {
                Reply::tool(
                    "spawn_teammate",
                    spawn("alice", "second life: carry on.", false),
                )
            }
            "alice" if rec.all_text().contains("second life") => {
                match request_ids(rec, "shutdown_request").first() {
                    Some(id) if calls(rec, "shutdown_response").is_empty() => Reply::tool(
                        "shutdown_response",
                        json!({"request_id": id, "approve": true}),
                    ),
                    _ => Reply::text("still here"),
                }
            }
            // The first alice crashes on her next call, leaving the request unanswered.
            "alice" if !request_ids(rec, "shutdown_request").is_empty() => {
                return Step::fault(Fault::status(400));
            }
            "alice" => Reply::text("ready"),
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    let alice = member(ws.path(), "alice").await;
    assert_eq!(alice.epoch, 2);
    assert_eq!(
        alice.status,
        AgentStatus::Idle,
        "the new alice keeps running"
    );
    let last = server.requests_for("alice").pop().unwrap();
    let (text, is_error) = results_of(&last, "shutdown_response").pop().unwrap();
    assert!(is_error && text.contains("incarnation 1"), "{text}");
    let shutdowns = requests(ws.path(), RequestKind::Shutdown).await;
    assert_eq!(shutdowns.len(), 1);
    assert_eq!(shutdowns[0].to_epoch, 1);
    assert_ne!(shutdowns[0].status, RequestStatus::Approved);
}

/// Moves a request's deadline into the past, as if the teammate had taken too long.
fn backdate(ws: &Path, id: &str) {
    let path: PathBuf = ws.join(format!(".troupe/teams/default/requests/{id}.json"));
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    value["expires_at"] = json!(1);
    let tmp = path.with_extension("tmp-test");
    std::fs::write(&tmp, serde_json::to_vec(&value).unwrap()).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

#[tokio::test]
async fn protocol_errors_are_results_the_model_can_act_on() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let root = ws.path().to_path_buf();
    server.set_fallback(move |rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
                    .with_tool("spawn_teammate", spawn("bob", "Say ready.", false))
            }
            "lead"
                if calls(rec, "shutdown_request").is_empty()
                    && has_mail(rec, "task_result", "alice")
                    && has_mail(rec, "task_result", "bob") =>
            {
                Reply::tool("shutdown_request", json!({"teammate": "alice"}))
                    .with_tool("shutdown_request", json!({"teammate": "bob"}))
            }
            "alice" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(id) => {
                    backdate(&root, &id);
                    Reply::tool(
                        "shutdown_response",
                        json!({"request_id": id, "approve": true}),
                    )
                }
                None => Reply::text("ready"),
            },
            "bob" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(mine) => {
                    let alices = troupe_testkit::block_on(requests(&root, RequestKind::Shutdown))
                        .into_iter()
                        .find(|r| r.to == "alice")
                        .unwrap()
                        .id;
                    Reply::tool(
                        "shutdown_response",
                        json!({"request_id": "no-such-request", "approve": true}),
                    )
                    .with_tool(
                        "shutdown_response",
                        json!({"request_id": alices, "approve": true}),
                    )
                    .with_tool(
                        "shutdown_response",
                        json!({"request_id": mine, "approve": false, "reason": "busy"}),
                    )
                    .with_tool(
                        "shutdown_response",
                        json!({"request_id": mine, "approve": true}),
                    )
                }
                None => Reply::text("ready"),
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);

    let bob_last = server.requests_for("bob").pop().unwrap();
    let results = results_of(&bob_last, "shutdown_response");
    assert_eq!(results.len(), 4, "{results:?}");
    let (unknown, wrong, rejected, again) = (&results[0], &results[1], &results[2], &results[3]);
    assert!(
        unknown.1 && unknown.0.contains("unknown request id"),
        "{unknown:?}"
    );
    assert!(
        wrong.1 && wrong.0.contains("addressed to alice"),
        "{wrong:?}"
    );
    assert!(!rejected.1, "{rejected:?}");
    assert!(again.1 && again.0.contains("already rejected"), "{again:?}");
    let alice_last = server.requests_for("alice").pop().unwrap();
    let (expired, is_error) = results_of(&alice_last, "shutdown_response").pop().unwrap();
    assert!(is_error && expired.contains("expired"), "{expired}");
    // Neither refusal stopped anyone.
    assert_eq!(member(ws.path(), "alice").await.status, AgentStatus::Idle);
    assert_eq!(member(ws.path(), "bob").await.status, AgentStatus::Idle);
    let shutdowns = requests(ws.path(), RequestKind::Shutdown).await;
    let status_of = |who: &str| shutdowns.iter().find(|r| r.to == who).unwrap().status;
    assert_eq!(status_of("alice"), RequestStatus::Expired);
    assert_eq!(status_of("bob"), RequestStatus::Rejected);
}

#[tokio::test]
async fn team_stop_asks_then_forces_and_requests_lists_them() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
            }
            "alice" => Reply::text("ready"),
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);
    let team = |args: &[&str]| {
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .arg("team")
            .args(args));
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let asked = team(&["stop", "alice", "--reason", "end of day"]);
    assert!(asked.contains("shutdown request"), "{asked}");
    let listed = team(&["requests"]);
    assert!(
        listed.contains("shutdown")
            && listed.contains("lead → alice (epoch 1)")
            && listed.contains("pending"),
        "{listed}"
    );
    let mail = team(&["inbox", "alice"]);
    assert!(
        mail.contains("shutdown_request") && mail.contains("end of day"),
        "{mail}"
    );

    let forced = team(&["stop", "alice", "--force"]);
    assert!(forced.contains("stopped"), "{forced}");
    assert_eq!(
        member(ws.path(), "alice").await.status,
        AgentStatus::Stopped
    );
    // The request to the stopped incarnation is void now.
    let json_list: Value = serde_json::from_str(&team(&["requests", "--json"])).unwrap();
    assert_eq!(json_list[0]["status"], "cancelled");
}
