//! One liveness rule through the real binary: a teammate process is alive while it holds its
//! lease. A SIGKILLed teammate restarted at once rejoins (its zombie blocks nothing) and loses
//! or repeats no mail; a second live one of the same name is refused; the tasks of a member that
//! dies or ends go back to the board; SIGTERM ends a teammate process at its round boundary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{alive, run, stderr, subcommand, troupe};
use protocol_support::{calls, has_mail, headless, member, spawn, store, unanswered};
use serde_json::json;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;
use troupe_protocol::{AgentStatus, Envelope, EventKind, MailKind, Task, TaskId, TaskStatus};
use troupe_store::{EventCursor, LeaseState, NewTask, SharedStore};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// Generous bound for conditions a broken build might never reach; nothing asserts on time.
const BOUND: Duration = Duration::from_secs(60);

#[track_caller]
fn wait_for(what: &str, done: impl FnMut() -> bool) {
    troupe_testkit::wait_until(what, BOUND, done)
}

/// [`wait_for`] for a check that reads the store.
async fn wait_for_async(what: &str, done: impl AsyncFnMut() -> bool) {
    troupe_testkit::wait_until_async(what, BOUND, done).await
}

fn wait_exit(child: &mut Child) -> ExitStatus {
    let mut status = None;
    wait_for("the process to exit", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn ok_server() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    server
}

/// `troupe teammate --name NAME …` started in `ws` (its output discarded).
fn teammate(ws: &Path, server: &FakeServer, name: &str) -> Child {
    troupe(ws, server, Wire::Anthropic)
        .args([
            "teammate",
            "--name",
            name,
            "--role",
            "tester",
            "--prompt",
            "consume your mail",
            "--permission-mode",
            "bypassPermissions",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The pid recorded by whoever holds `name`'s lease, if it is held.
async fn holder(store: &SharedStore, name: &str) -> Option<u32> {
    match store.probe_lease(name).await.unwrap() {
        LeaseState::Held(h) => h.map(|h| h.pid),
        LeaseState::Free => None,
    }
}

/// Starts `name` and waits until that process holds its lease and is on the roster.
async fn started(ws: &Path, server: &FakeServer, name: &str) -> Child {
    let child = teammate(ws, server, name);
    let s = store(ws);
    wait_for_async("the teammate to hold its lease and join", async || {
        holder(&s, name).await == Some(child.id())
            && s.roster()
                .await
                .unwrap()
                .get(name)
                .is_some_and(|m| m.pid == Some(child.id()))
    })
    .await;
    child
}

/// (distinct, total) mail ids recorded as delivered in `name`'s transcript.
fn delivered(ws: &Path, name: &str) -> (HashSet<String>, usize) {
    common::delivered_mail(&ws.join(format!(".troupe/teams/default/transcripts/{name}.jsonl")))
}

async fn send(store: &SharedStore, sent: &mut HashSet<String>, tag: &str, count: usize) {
    for k in 0..count {
        let env = Envelope::new(MailKind::Message, "lead", "bob", format!("{tag}-{k}"), 0);
        store.append(&env).await.unwrap();
        sent.insert(env.id);
    }
}

fn now() -> u64 {
    troupe_agent::transcript::now_ms()
}

async fn new_task(store: &SharedStore, subject: &str) -> TaskId {
    let task = store
        .create_task(&NewTask {
            subject: subject.into(),
            created_by: "lead".into(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    task.id
}

/// The note of the task's latest transition.
fn last_note(task: &Task) -> String {
    task.history
        .last()
        .and_then(|t| t.note.clone())
        .unwrap_or_default()
}

/// Asserts the task is back on the board (pending, unowned) with a note containing `why`,
/// that the release is an event, and that the lead was told by mail.
/// Makes `owner` hold the task: claims it for them, unless they (an auto-claiming teammate that
/// went idle first) already took it themselves.
async fn held_by(store: &SharedStore, id: TaskId, owner: &str) {
    match store.claim_task(id, owner, now()).await {
        Ok(_) => {}
        Err(troupe_store::StoreError::Task(_))
            if store.get_task(id).await.unwrap().owner.as_deref() == Some(owner) => {}
        Err(e) => panic!("claiming task {id} for {owner}: {e}"),
    }
}

async fn assert_released(store: &SharedStore, id: TaskId, why: &str) -> Task {
    let task = store.get_task(id).await.unwrap();
    assert_eq!(task.status, TaskStatus::Pending, "{task:?}");
    assert_eq!(task.owner, None, "{task:?}");
    assert!(
        last_note(&task).contains(why),
        "note: {:?}",
        last_note(&task)
    );
    assert!(release_recorded(store, id).await, "the release is an event");
    task
}

/// Whether the event log holds the task's return from in progress to pending.
async fn release_recorded(store: &SharedStore, id: TaskId) -> bool {
    let events = store.read_events(EventCursor::START).await.unwrap().events;
    events.iter().any(|e| {
        e.kind == EventKind::TaskTransitioned
            && e.detail.contains(&format!("task {id} "))
            && e.detail.contains("in_progress -> pending")
    })
}

/// Whether any mail the lead has (unread) or was shown (by the fake model) names the task as
/// back on the board.
async fn lead_told(store: &SharedStore, server: Option<&FakeServer>, id: TaskId) -> bool {
    let needle = format!("task {id} \"");
    let unread = store
        .peek("lead")
        .await
        .unwrap()
        .messages
        .iter()
        .any(|m| m.content.contains("Back on the board") && m.content.contains(&needle));
    let shown = server.is_some_and(|s| {
        s.requests_for("lead").iter().any(|r| {
            let text = r.all_text();
            text.contains("Back on the board") && text.contains(&needle)
        })
    });
    unread || shown
}

#[tokio::test]
async fn a_sigkilled_teammate_restarted_at_once_rejoins_and_gets_every_message_exactly_once() {
    let ws = TempWorkspace::new();
    let server = ok_server();
    let s = store(ws.path());
    let mut first = started(ws.path(), &server, "bob").await;
    let first_pid = first.id();
    let mut sent = HashSet::new();
    send(&s, &mut sent, "before", 20).await;
    wait_for("some mail delivered", || {
        !delivered(ws.path(), "bob").0.is_empty()
    });

    first.kill().unwrap(); // SIGKILL
                           // Not reaped yet: the old process stays a zombie while its successor starts, which
                           // `kill(pid, 0)` would have taken for alive.
    wait_for("the killed process to be gone", || !alive(first_pid));
    send(&s, &mut sent, "while-dead", 20).await;
    let mut second = teammate(ws.path(), &server, "bob");
    let second_pid = second.id();
    wait_for_async("the restarted bob to hold the lease", async || {
        holder(&s, "bob").await == Some(second_pid)
    })
    .await;
    first.wait().unwrap();
    send(&s, &mut sent, "after", 20).await;

    wait_for_async("every message delivered and acknowledged", async || {
        delivered(ws.path(), "bob").0.len() == sent.len() && s.peek("bob").await.unwrap().is_empty()
    })
    .await;
    let (ids, total) = delivered(ws.path(), "bob");
    assert_eq!(ids, sent, "every message, and only those");
    assert_eq!(total, sent.len(), "none delivered twice");
    // A rejoin, not a refusal and not a new member: same epoch, the new pid.
    let bob = member(ws.path(), "bob").await;
    assert_eq!((bob.epoch, bob.pid), (1, Some(second_pid)));
    assert!(!bob.status.is_ended(), "{bob:?}");
    let events = s.read_events(EventCursor::START).await.unwrap().events;
    assert!(events.iter().any(|e| e
        .detail
        .contains(&format!("rejoined (epoch 1, pid {second_pid})"))));
    second.kill().unwrap();
    second.wait().unwrap();
}

#[tokio::test]
async fn a_second_live_teammate_of_one_name_is_refused_naming_the_first() {
    let ws = TempWorkspace::new();
    let server = ok_server();
    let s = store(ws.path());
    let mut bob = started(ws.path(), &server, "bob").await;
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "teammate",
        "--name",
        "bob",
        "--prompt",
        "me too",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("teammate 'bob' of team 'default' is already running")
            && err.contains(&format!("pid {}", bob.id()))
            && err.contains("default/members (bob's slot)"),
        "{err}"
    );
    // The first is untouched: it still holds the lease and the roster entry.
    assert_eq!(holder(&s, "bob").await, Some(bob.id()));
    assert_eq!(member(ws.path(), "bob").await.pid, Some(bob.id()));
    assert!(
        !server
            .requests_for("bob")
            .iter()
            .any(|r| r.all_text().contains("me too")),
        "the refused one never ran"
    );
    bob.kill().unwrap();
    bob.wait().unwrap();
}

#[tokio::test]
async fn a_task_of_a_sigkilled_teammate_goes_back_when_status_looks_and_another_can_claim_it() {
    let ws = TempWorkspace::new();
    let server = ok_server();
    let s = store(ws.path());
    let id = new_task(&s, "write the parser").await;
    let mut bob = started(ws.path(), &server, "bob").await;
    held_by(&s, id, "bob").await;
    bob.kill().unwrap();
    bob.wait().unwrap();
    // Nobody has looked yet: the board still names bob.
    assert_eq!(s.get_task(id).await.unwrap().owner.as_deref(), Some("bob"));

    let out = subcommand(ws.path(), &["team", "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(&out, &format!("task {id} went back to the board"));
    assert_released(&s, id, "its owner bob is not running").await;
    assert!(lead_told(&s, None, id).await, "the lead is told by mail");
    // Carol is alive (this process holds her lease, as her own process would) and claims it.
    let _carol = s.acquire_lease("carol").await.unwrap();
    let claimed = s.claim_task(id, "carol", now()).await.unwrap();
    assert_eq!(claimed.owner.as_deref(), Some("carol"));
    // Looking again changes nothing: carol's claim is not bob's.
    let again = subcommand(ws.path(), &["team", "status"]);
    assert!(again.status.success());
    assert_eq!(
        s.get_task(id).await.unwrap().owner.as_deref(),
        Some("carol")
    );
}

#[tokio::test]
async fn a_sigkilled_teammate_that_rejoins_gives_back_what_its_dead_process_held() {
    let ws = TempWorkspace::new();
    let server = ok_server();
    let s = store(ws.path());
    let id = new_task(&s, "write the lexer").await;
    let mut bob = started(ws.path(), &server, "bob").await;
    held_by(&s, id, "bob").await;
    bob.kill().unwrap();
    bob.wait().unwrap();
    let mut again = started(ws.path(), &server, "bob").await;
    // The rejoining process gives it back as it joins; the lead's mail comes last.
    wait_for_async("the task to go back and the lead to be told", async || {
        lead_told(&s, None, id).await
    })
    .await;
    // The new bob, idle and auto-claiming, may take the task straight back: what matters is
    // that the dead process's claim was given back first, with its reason, as an event.
    let task = s.get_task(id).await.unwrap();
    let release = task
        .history
        .iter()
        .find(|t| t.from == TaskStatus::InProgress && t.to == TaskStatus::Pending)
        .unwrap_or_else(|| panic!("no release in {task:?}"));
    assert!(
        release
            .note
            .as_deref()
            .is_some_and(|n| n.contains("previous process ended (bob rejoined")),
        "{task:?}"
    );
    assert!(release_recorded(&s, id).await, "the release is an event");
    again.kill().unwrap();
    again.wait().unwrap();
}

#[tokio::test]
async fn a_working_process_teammate_killed_owning_a_task_is_failed_by_the_lead_and_the_task_returns(
) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "work on task 1"}),
    );
    // Alice works (her model call never answers) until she is killed.
    server.script(
        "alice",
        [Step::delay(Duration::from_secs(600), Step::text("never"))],
    );
    let s = store(ws.path());
    let id = new_task(&s, "parse the input").await;
    let lead = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "go",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
            "--teammate-mode",
            "process",
            "--team-timeout",
            "120",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Her own process holds her lease (handed to it by the lead) and she is at work.
    let mut pid = 0;
    wait_for_async("alice's process to work", async || {
        let Some(m) = s.roster().await.unwrap().get("alice").cloned() else {
            return false;
        };
        pid = m.pid.unwrap_or(0);
        m.status == AgentStatus::Working
            && holder(&s, "alice").await == m.pid
            && !server.requests_for("alice").is_empty()
    })
    .await;
    assert_ne!(pid, std::process::id());
    s.claim_task(id, "alice", now()).await.unwrap();
    let alice = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(alice, rustix::process::Signal::KILL).unwrap();

    let out = lead.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(member(ws.path(), "alice").await.status, AgentStatus::Failed);
    assert_released(&s, id, "its owner alice died").await;
    assert!(lead_told(&s, Some(&server), id).await);
    let lead_saw = server.requests_for("lead").pop().unwrap().all_text();
    assert!(lead_saw.contains("teammate 'alice' failed"), "{lead_saw}");
    assert_eq!(
        s.claim_task(id, "bob", now())
            .await
            .unwrap()
            .owner
            .as_deref(),
        Some("bob")
    );
}

#[tokio::test]
async fn an_approved_shutdown_gives_the_members_tasks_back() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let s = store(ws.path());
    let task_id = new_task(&s, "review the design").await;
    let claimer = s.clone();
    server.set_fallback(move |rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => {
                Reply::tool("spawn_teammate", spawn("alice", "Say ready.", false))
            }
            "lead"
                if has_mail(rec, "task_result", "alice")
                    && calls(rec, "shutdown_request").is_empty() =>
            {
                Reply::tool("shutdown_request", json!({"teammate": "alice"}))
            }
            "alice" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(id) => Reply::tool(
                    "shutdown_response",
                    json!({"request_id": id, "approve": true}),
                ),
                None => {
                    // Alice takes the task as she starts (the board's own claim).
                    let _ = troupe_testkit::block_on(claimer.claim_task(task_id, "alice", now()));
                    Reply::text("ready")
                }
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    headless(&ws, &server, "acceptEdits", &[]);
    assert_eq!(
        member(ws.path(), "alice").await.status,
        AgentStatus::Shutdown
    );
    let task = assert_released(&s, task_id, "its owner alice shut down").await;
    assert!(
        task.history.iter().any(|t| t.by == "alice"),
        "alice had claimed it: {task:?}"
    );
    assert!(lead_told(&s, Some(&server), task_id).await);
}

#[tokio::test]
async fn a_force_stop_gives_the_tasks_back_and_the_process_ends_cleanly() {
    let ws = TempWorkspace::new();
    let server = ok_server();
    let s = store(ws.path());
    let id = new_task(&s, "fix the build").await;
    let mut bob = started(ws.path(), &server, "bob").await;
    held_by(&s, id, "bob").await;
    let out = subcommand(ws.path(), &["team", "stop", "bob", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_released(&s, id, "its owner bob was force-stopped by user:").await;
    assert!(lead_told(&s, None, id).await);
    // SIGTERM from the force-stop: it ends by itself, cleanly.
    let status = wait_exit(&mut bob);
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(member(ws.path(), "bob").await.status, AgentStatus::Stopped);
    assert_eq!(holder(&s, "bob").await, None, "its lease went with it");
}

#[tokio::test]
async fn sigterm_ends_a_teammate_process_at_its_round_boundary_leaving_it_resumable() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    // One round: a bash call that blocks until the test lets it go, then writes a marker.
    // Were the turn to continue, the model would be asked again.
    let cmd = "touch started; while [ ! -f go ]; do sleep 0.02; done; echo done > finished";
    server.script(
        "bob",
        [
            Step::tool("bash", json!({ "command": cmd })),
            Step::text("should not be asked for"),
        ],
    );
    let log = ws.path().join("bob.log");
    let mut bob = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "teammate",
            "--name",
            "bob",
            "--prompt",
            "work",
            "--permission-mode",
            "bypassPermissions",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for("bob's tool call to start", || {
        ws.path().join("started").exists()
    });
    let pid = rustix::process::Pid::from_child(&bob);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    wait_for("bob to take the signal", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("ending at the round boundary"))
    });
    // Mid-round: the tool call is still blocked, so the process must still be there.
    assert!(bob.try_wait().unwrap().is_none(), "it ended mid-round");
    std::fs::write(ws.path().join("go"), "").unwrap();
    let status = wait_exit(&mut bob);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert!(ws.path().join("finished").exists(), "the round finished");
    assert_eq!(
        server.requests_for("bob").len(),
        1,
        "no model call after the round"
    );
    let m = member(ws.path(), "bob").await;
    assert_eq!((m.status, m.epoch), (AgentStatus::Idle, 1), "resumable");
    assert_eq!(holder(&store(ws.path()), "bob").await, None);
}
