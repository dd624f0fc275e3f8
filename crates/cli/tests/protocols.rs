//! Team protocols end to end (issue 4): shutdown handshake, plan approval gate, permission
//! escalation and their errors, through the real binary with scripted models. Every agent's
//! script is reactive — it decides from the conversation it is sent — so the tests do not
//! depend on how the agents' turns interleave.

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use troupe_protocol::{AgentStatus, ContentBlock, Member, Request, RequestKind, RequestStatus};
use troupe_store::{EventLog, FileStore, RequestFilter, RequestStore, RosterStore};
use troupe_testkit::{FakeServer, Fault, Recorded, Reply, Step, TempWorkspace, Wire};

/// One `<message …>` block of an injected inbox.
#[derive(Debug, Clone)]
struct Mail {
    kind: String,
    from: String,
    request_id: Option<String>,
    body: String,
}

fn attr(head: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = head.find(&key)? + key.len();
    let len = head[start..].find('"')?;
    Some(head[start..start + len].to_string())
}

/// Every mail the agent has been shown so far, oldest first.
fn mails(rec: &Recorded) -> Vec<Mail> {
    let text = rec.all_text();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("<message id=\"") {
        rest = &rest[at..];
        let Some(head_end) = rest.find('>') else {
            break;
        };
        let head = &rest[..head_end];
        let body_end = rest.find("</message>").unwrap_or(rest.len());
        out.push(Mail {
            kind: attr(head, "type").unwrap_or_default(),
            from: attr(head, "from").unwrap_or_default(),
            request_id: attr(head, "request_id"),
            body: rest[head_end + 1..body_end].to_string(),
        });
        rest = &rest[body_end.min(rest.len())..];
        if rest.starts_with("</message>") {
            rest = &rest["</message>".len()..];
        }
    }
    out
}

/// Request ids of mail of one kind, first appearance order, without repeats.
fn request_ids(rec: &Recorded, kind: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for m in mails(rec).into_iter().filter(|m| m.kind == kind) {
        if let Some(id) = m.request_id {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Inputs of every call of `tool` the agent has made so far.
fn calls(rec: &Recorded, tool: &str) -> Vec<Value> {
    rec.messages()
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { name, input, .. } if name == tool => Some(input),
            _ => None,
        })
        .collect()
}

/// Request ids the agent has already answered with `tool`.
fn answered(rec: &Recorded, tool: &str) -> Vec<String> {
    calls(rec, tool)
        .iter()
        .filter_map(|i| i["request_id"].as_str().map(str::to_string))
        .collect()
}

/// The first id of `kind` mail not yet answered with `tool`.
fn unanswered(rec: &Recorded, kind: &str, tool: &str) -> Option<String> {
    let done = answered(rec, tool);
    request_ids(rec, kind)
        .into_iter()
        .find(|id| !done.contains(id))
}

/// Results of every call of `tool`, in order, as (content, is_error).
fn results_of(rec: &Recorded, tool: &str) -> Vec<(String, bool)> {
    let messages = rec.messages();
    let ids: Vec<String> = messages
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, .. } if name == tool => Some(id),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if ids.contains(&tool_use_id) => Some((content, is_error)),
            _ => None,
        })
        .collect()
}

fn has_mail(rec: &Recorded, kind: &str, from: &str) -> bool {
    mails(rec).iter().any(|m| m.kind == kind && m.from == from)
}

fn spawn(name: &str, prompt: &str, require_plan: bool) -> Value {
    json!({"name": name, "role": "coder", "prompt": prompt, "require_plan": require_plan})
}

fn store(ws: &Path) -> FileStore {
    FileStore::open(&ws.join(".troupe"), "default").expect("team store opens")
}

fn member(ws: &Path, name: &str) -> Member {
    store(ws)
        .roster()
        .unwrap()
        .get(name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is on the roster"))
}

fn requests(ws: &Path, kind: RequestKind) -> Vec<Request> {
    store(ws)
        .list_requests(&RequestFilter {
            kind: Some(kind),
            ..RequestFilter::default()
        })
        .unwrap()
}

/// A headless run of the lead with a team; `mode` is the permission mode for everyone.
fn headless(ws: &TempWorkspace, server: &FakeServer, mode: &str, extra: &[&str]) -> Output {
    let out = run(troupe(ws.path(), server, Wire::Anthropic)
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--team-timeout",
            "120",
            "--permission-mode",
            mode,
        ])
        .args(extra));
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(result_json(&out)["subtype"], "success");
    out
}

#[test]
fn alice_approves_shutdown_and_her_loop_ends() {
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

    let alice = member(ws.path(), "alice");
    assert_eq!(alice.status, AgentStatus::Shutdown);
    // Her loop ended: "ready", then the approving call, and no model call after it.
    let calls_made = server.requests_for("alice");
    assert_eq!(calls_made.len(), 2);
    assert!(calls_made[1].all_text().contains("work is done"));
    let shutdowns = requests(ws.path(), RequestKind::Shutdown);
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
    let events = store(ws.path()).read_events(0).unwrap().events;
    let kinds: Vec<String> = events
        .iter()
        .filter(|e| e.detail.contains(&r.id))
        .map(|e| e.kind.as_str().to_string())
        .collect();
    assert!(kinds.contains(&"request_opened".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"request_resolved".to_string()), "{kinds:?}");
}

#[test]
fn bob_in_plan_mode_cannot_write_and_a_rejected_plan_changes_nothing() {
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
    let plans = requests(ws.path(), RequestKind::Plan);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Rejected);
    assert_eq!(plans[0].from, "bob");
    let bob = member(ws.path(), "bob");
    assert!(bob.require_plan && !bob.plan_approved);
}

#[test]
fn charlie_plan_approved_then_his_change_is_on_disk() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("charlie", "Add a greeting file.", true),
            ),
            "lead" => match unanswered(rec, "plan_approval_request", "review_plan") {
                Some(id) => Reply::tool("review_plan", json!({"request_id": id, "approve": true})),
                None => Reply::text("ok"),
            },
            "charlie" if calls(rec, "submit_plan").is_empty() => Reply::tool(
                "submit_plan",
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
    let charlie = member(ws.path(), "charlie");
    assert!(charlie.require_plan && charlie.plan_approved);
    let plans = requests(ws.path(), RequestKind::Plan);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Approved);
    let last = server.requests_for("charlie").pop().unwrap();
    assert!(!results_of(&last, "write_file")[0].1);
}

#[test]
fn busy_teammate_rejects_shutdown_then_approves_when_asked_again() {
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

    let shutdowns = requests(ws.path(), RequestKind::Shutdown);
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
    assert_eq!(member(ws.path(), "alice").status, AgentStatus::Shutdown);
    let lead_text: String = server
        .requests_for("lead")
        .iter()
        .map(|r| r.all_text())
        .collect();
    assert!(lead_text.contains("busy: halfway through the migration"));
}

#[test]
fn two_shutdowns_answered_in_reverse_order_correlate() {
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

    let shutdowns = requests(ws.path(), RequestKind::Shutdown);
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
    assert_eq!(member(ws.path(), "alice").status, AgentStatus::Shutdown);
    assert_eq!(member(ws.path(), "bob").status, AgentStatus::Shutdown);
}

/// Waits (polling the store, not timing anything) until a plan request is pending.
fn wait_for_pending_plan(ws: &Path) -> Request {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = FileStore::open(&ws.join(".troupe"), "default") {
            let pending = s
                .list_requests(&RequestFilter {
                    status: Some(RequestStatus::Pending),
                    kind: Some(RequestKind::Plan),
                    agent: None,
                })
                .unwrap_or_default();
            if let Some(r) = pending.into_iter().next() {
                return r;
            }
        }
        assert!(Instant::now() < deadline, "no plan request was opened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pending_plan_survives_a_restart_and_can_then_be_approved() {
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
    let pending = wait_for_pending_plan(ws.path());
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
    let after = store(ws.path()).get_request(&pending.id).unwrap().unwrap();
    assert_eq!(after.status, RequestStatus::Approved);
    assert_eq!(ws.read("plan.txt"), "done");
    assert!(member(ws.path(), "bob").plan_approved);
}

#[test]
fn a_request_to_alices_previous_incarnation_does_not_stop_the_new_alice() {
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

    let alice = member(ws.path(), "alice");
    assert_eq!(alice.epoch, 2);
    assert_eq!(
        alice.status,
        AgentStatus::Idle,
        "the new alice keeps running"
    );
    let last = server.requests_for("alice").pop().unwrap();
    let (text, is_error) = results_of(&last, "shutdown_response").pop().unwrap();
    assert!(is_error && text.contains("incarnation 1"), "{text}");
    let shutdowns = requests(ws.path(), RequestKind::Shutdown);
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

#[test]
fn protocol_errors_are_results_the_model_can_act_on() {
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
                    let alices = requests(&root, RequestKind::Shutdown)
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
    assert_eq!(member(ws.path(), "alice").status, AgentStatus::Idle);
    assert_eq!(member(ws.path(), "bob").status, AgentStatus::Idle);
    let shutdowns = requests(ws.path(), RequestKind::Shutdown);
    let status_of = |who: &str| shutdowns.iter().find(|r| r.to == who).unwrap().status;
    assert_eq!(status_of("alice"), RequestStatus::Expired);
    assert_eq!(status_of("bob"), RequestStatus::Rejected);
}

#[test]
fn teammate_tool_call_waits_for_the_leads_permission() {
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
    let perms = requests(ws.path(), RequestKind::Permission);
    let statuses: Vec<RequestStatus> = perms.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RequestStatus::Approved, RequestStatus::Rejected]);
    assert!(perms.iter().all(|r| r.from == "alice" && r.to == "lead"));
}

#[test]
fn user_answers_teammate_permissions_when_configured_and_headless_has_no_user() {
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
    let perms = requests(ws.path(), RequestKind::Permission);
    assert_eq!(perms.len(), 1);
    assert_eq!(perms[0].status, RequestStatus::Rejected);
}

#[test]
fn team_stop_asks_then_forces_and_requests_lists_them() {
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
            && listed.contains("lead → alice#1")
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
    assert_eq!(member(ws.path(), "alice").status, AgentStatus::Stopped);
    // The request to the stopped incarnation is void now.
    let json_list: Value = serde_json::from_str(&team(&["requests", "--json"])).unwrap();
    assert_eq!(json_list[0]["status"], "cancelled");
}
