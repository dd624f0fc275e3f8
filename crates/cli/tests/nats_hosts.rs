//! A team spread over "hosts" — separate workspace folders that share no file, joined only by a
//! real NATS server: a lead in workspace A, `troupe teammate` processes in B and C. The s09
//! session, the shutdown handshake and plan approval, a task whose owner's host vanishes, and
//! claims racing from four workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod nats_support;
mod protocol_support;

use common::{result_json, run, stderr, troupe};
use nats_support::{kill_and_lapse, wait_for, wait_for_async, Team};
use protocol_support::{calls, has_mail, spawn, unanswered};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use troupe_protocol::{AgentStatus, RequestKind, RequestStatus, TaskStatus};
use troupe_store::{NewTask, RequestFilter};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// Every request of `agent` contains this text somewhere.
fn saw(server: &FakeServer, agent: &str, text: &str) -> bool {
    server
        .requests_for(agent)
        .iter()
        .any(|r| r.all_text().contains(text))
}

/// The lead, headless in workspace `ws`, on `team`; asserts it succeeded.
fn lead(ws: &TempWorkspace, server: &FakeServer, team: &Team, extra: &[&str]) {
    let out = run(troupe(ws.path(), server, Wire::Anthropic)
        .args(["-p", "run the scenario", "--output-format", "json"])
        .args([
            "--team-timeout",
            "120",
            "--permission-mode",
            "bypassPermissions",
        ])
        .args(team.args())
        .args(extra));
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(result_json(&out)["subtype"], "success");
}

fn end(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn the_s09_session_across_three_workspaces() {
    let (a, b, c) = (
        TempWorkspace::new(),
        TempWorkspace::new(),
        TempWorkspace::new(),
    );
    let team = Team::new();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    server.script("bob", [Step::text("bob: standing by")]);
    server.script(
        "alice",
        [
            Step::tool(
                "send_message",
                json!({"to": "bob", "content": "hello bob, the code is ready"}),
            ),
            Step::text("alice: code written, bob told"),
        ],
    );
    server.script(
        "lead",
        [
            Step::tool(
                "broadcast",
                json!({"content": "status update: phase 1 complete"}),
            ),
            Step::tool("read_inbox", json!({})),
            Step::text("the team is at work"),
        ],
    );
    // bob on host C first, so alice on host B finds him on the roster.
    let bob = team
        .started(
            c.path(),
            &server,
            "bob",
            &["--prompt", "Wait for alice, then test."],
        )
        .await;
    let alice = team
        .started(
            b.path(),
            &server,
            "alice",
            &["--prompt", "Write the code, then tell bob it is ready."],
        )
        .await;
    lead(&a, &server, &team, &[]);

    // alice's message and the broadcast reached bob; the broadcast reached alice.
    assert!(saw(&server, "bob", "hello bob, the code is ready"));
    assert!(saw(&server, "bob", "status update: phase 1 complete"));
    assert!(saw(&server, "alice", "status update: phase 1 complete"));
    // Each teammate's report reached the lead on another host.
    assert!(saw(&server, "lead", "alice: code written, bob told"));
    assert!(saw(&server, "lead", "bob: standing by") || saw(&server, "lead", "ack from bob"));
    // Each host keeps a local copy of the transcripts of the agents it runs (the team's copy
    // is on the server); nothing is shared through files.
    assert!(team.transcript(b.path(), "alice").is_file());
    assert!(team.transcript(c.path(), "bob").is_file());
    assert!(!team.transcript(a.path(), "alice").exists());
    assert!(!team.transcript(a.path(), "bob").exists());
    for file in ["roster.json", "roster.jsonl"] {
        assert!(!b
            .path()
            .join(format!(".troupe/teams/{}/{file}", team.name))
            .exists());
    }

    // From any host: the roster and the log.
    let status = team.subcommand(c.path(), &["team", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("alice") && text.contains("bob") && text.contains("idle"),
        "{text}"
    );
    let log = team.subcommand(b.path(), &["team", "log"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains("member_spawned") && log.contains("status_changed"),
        "{log}"
    );
    end(alice);
    end(bob);
}

#[tokio::test]
async fn shutdown_handshake_and_plan_approval_across_hosts() {
    let (a, b) = (TempWorkspace::new(), TempWorkspace::new());
    let team = Team::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            // The lead spawns charlie as a process of its own (its lease handed over through
            // the server), approves his plan, and asks bob on the other host to shut down.
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("charlie", "Add a greeting file.", true),
            ),
            "lead" => match unanswered(rec, "plan_approval_request", "review_plan") {
                Some(id) => Reply::tool("review_plan", json!({"request_id": id, "approve": true})),
                None if calls(rec, "shutdown_request").is_empty() => {
                    Reply::tool("shutdown_request", json!({"teammate": "bob"}))
                }
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
            "bob" => match unanswered(rec, "shutdown_request", "shutdown_response") {
                Some(id) => Reply::tool(
                    "shutdown_response",
                    json!({"request_id": id, "approve": true, "reason": "done here"}),
                ),
                None => Reply::text("bob idle"),
            },
            _ => Reply::text("ok"),
        };
        Step::reply(step)
    });
    let mut bob = team
        .started(b.path(), &server, "bob", &["--prompt", "Stand by."])
        .await;
    lead(&a, &server, &team, &["--teammate-mode", "process"]);

    // bob approved and his process on host B ended by itself, cleanly.
    wait_for("bob's process to exit", || {
        bob.try_wait().unwrap().is_some()
    })
    .await;
    assert!(bob.wait().unwrap().success());
    let s = team.store(&a.path().join(".probe")).await;
    let roster = s.roster().await.unwrap();
    assert_eq!(roster.get("bob").unwrap().status, AgentStatus::Shutdown);
    // Awaited: the store's client lives on this test's runtime, which a blocking wait here
    // would stall.
    let all = async |kind| {
        s.list_requests(&RequestFilter {
            kind: Some(kind),
            ..RequestFilter::default()
        })
        .await
        .unwrap()
    };
    let shutdowns = all(RequestKind::Shutdown).await;
    assert_eq!(shutdowns.len(), 1);
    assert_eq!(shutdowns[0].status, RequestStatus::Approved);
    // charlie's plan went to the lead and back through the server, then he wrote the file.
    let plans = all(RequestKind::Plan).await;
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Approved);
    assert_eq!(a.read("greeting.txt"), "hello");
    let charlie = roster.get("charlie").unwrap();
    assert!(charlie.require_plan && charlie.plan_approved);
    assert!(charlie.pid.is_some_and(|p| p != std::process::id()));
}

#[tokio::test]
async fn a_task_whose_owners_host_vanishes_goes_back_after_the_ttl_and_another_claims_it() {
    let (b, c, d) = (
        TempWorkspace::new(),
        TempWorkspace::new(),
        TempWorkspace::new(),
    );
    let team = Team::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    let s = team.store(&d.path().join(".probe")).await;
    let id = s
        .create_task(&NewTask {
            subject: "write the parser".into(),
            created_by: "lead".into(),
            ..NewTask::default()
        })
        .await
        .unwrap()
        .id;
    // alice on host B, idle and auto-claiming, takes the task.
    let mut alice = team
        .started(b.path(), &server, "alice", &["--prompt", "Work the board."])
        .await;
    wait_for_async("alice to claim the task", async || {
        s.get_task(id).await.unwrap().owner.as_deref() == Some("alice")
    })
    .await;
    // Host B vanishes: nothing says goodbye; the lease lapses after the TTL.
    kill_and_lapse(&mut alice, &s, "alice").await;
    assert_eq!(
        s.get_task(id).await.unwrap().owner.as_deref(),
        Some("alice")
    );
    // Anyone looking at the team (here from host D) gives the task back to the board...
    let out = team.subcommand(d.path(), &["team", "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(&out, &format!("task {id} went back to the board"));
    let task = s.get_task(id).await.unwrap();
    assert_eq!(
        (task.status, task.owner.clone()),
        (TaskStatus::Pending, None),
        "{task:?}"
    );
    // ...and bob on host C, woken through the server, claims it.
    let bob = team
        .started(c.path(), &server, "bob", &["--prompt", "Work the board."])
        .await;
    wait_for_async("bob to claim the released task", async || {
        s.get_task(id).await.unwrap().owner.as_deref() == Some("bob")
    })
    .await;
    let task = s.get_task(id).await.unwrap();
    assert_eq!(task.status, TaskStatus::InProgress);
    assert!(task.history.iter().any(|t| t
        .note
        .as_deref()
        .is_some_and(|n| n.contains("alice is not running"))));
    end(bob);
}

#[tokio::test]
async fn four_workspaces_racing_for_one_task_200_times_claim_it_once_each_time() {
    const TRIALS: usize = 200;
    let team = Team::new();
    let hosts: Vec<TempWorkspace> = (0..4).map(|_| TempWorkspace::new()).collect();
    let s = team.store(&hosts[0].path().join(".probe")).await;
    // A lead started the team (the `task` commands refuse a team nobody started).
    s.update_roster(&mut |r| r.lead = "lead".into())
        .await
        .unwrap();
    for trial in 0..TRIALS {
        let id = s
            .create_task(&NewTask {
                subject: format!("contended {trial}"),
                created_by: "lead".into(),
                ..NewTask::default()
            })
            .await
            .unwrap()
            .id
            .to_string();
        let claimers: Vec<Child> = hosts
            .iter()
            .enumerate()
            .map(|(i, ws)| {
                Command::new(env!("CARGO_BIN_EXE_troupe"))
                    .current_dir(ws.path())
                    .env("HOME", ws.path().join(".home"))
                    .args(["task", "claim", &id, "--owner", &format!("user:p{i}")])
                    .args(team.args())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let won = claimers
            .into_iter()
            .map(|mut c| c.wait().unwrap())
            .filter(|status| status.success())
            .count();
        assert_eq!(won, 1, "trial {trial}: {won} claims succeeded");
        let task = s.get_task(id.parse().unwrap()).await.unwrap();
        assert_eq!(task.history.len(), 1, "trial {trial}: claimed once");
    }
}

#[test]
fn a_server_that_is_down_is_a_clear_error_naming_what_to_check() {
    let ws = TempWorkspace::new();
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let team = Team {
        url: format!("nats://127.0.0.1:{port}"),
        name: "web".into(),
    };
    let out = team.subcommand(ws.path(), &["team", "status"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("127.0.0.1:{port}"))
            && err.contains("nats-server")
            && err.contains("-js"),
        "{err}"
    );
}

/// `troupe teammate --name bob` on `team` in `ws`, playing host `host`, its stderr to `log`.
fn bob_on_host(
    team: &Team,
    ws: &std::path::Path,
    server: &FakeServer,
    host: Option<&str>,
    extra: &[&str],
    log: &std::path::Path,
) -> Child {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    cmd.args(["teammate", "--name", "bob", "--role", "tester"])
        .args(team.args())
        .args(["--permission-mode", "bypassPermissions", "--prompt", "idle"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    match host {
        Some(h) => cmd.env("TROUPE_HOST_NAME", h),
        None => cmd.env_remove("TROUPE_HOST_NAME"),
    };
    cmd.spawn().unwrap()
}

#[tokio::test]
async fn a_sigkilled_teammate_restarted_at_once_on_its_host_takes_its_lease_over_without_waiting() {
    // A TTL far longer than the test's bound: only the /proc check can let the restart through.
    let team = Team {
        url: format!("{}?lease_ttl=600", troupe_testkit::nats::url()),
        name: troupe_testkit::nats::fresh_team(),
    };
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    let s = team.store(&ws.path().join(".probe")).await;
    let log = ws.path().join("bob.log");
    let mut first = bob_on_host(&team, ws.path(), &server, None, &[], &log);
    let first_pid = first.id();
    wait_for_async("bob to hold his lease", async || {
        nats_support::holder(&s, "bob").await == Some(first_pid)
    })
    .await;
    first.kill().unwrap(); // SIGKILL: the key stays on the server for its TTL
    first.wait().unwrap();
    let second = bob_on_host(&team, ws.path(), &server, None, &["--no-wait"], &log);
    let second_pid = second.id();
    wait_for_async("the restarted bob to take the lease over", async || {
        nats_support::holder(&s, "bob").await == Some(second_pid)
    })
    .await;
    wait_for_async("the restarted bob to rejoin", async || {
        s.roster()
            .await
            .unwrap()
            .get("bob")
            .is_some_and(|m| m.pid == Some(second_pid))
    })
    .await;
    end(second);
}

#[tokio::test]
async fn a_teammate_whose_lease_another_host_holds_waits_for_it_to_lapse_unless_told_not_to() {
    let team = Team::new(); // lease TTL: nats_support::TTL_SECS
    let (b, c) = (TempWorkspace::new(), TempWorkspace::new());
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    let s = team.store(&c.path().join(".probe")).await;
    let mut on_b = bob_on_host(
        &team,
        b.path(),
        &server,
        Some("host-b"),
        &[],
        &b.path().join("bob.log"),
    );
    let b_pid = on_b.id();
    wait_for_async("bob on host-b to hold his lease", async || {
        nats_support::holder(&s, "bob").await == Some(b_pid)
    })
    .await;
    // --no-wait: refused at once, naming the holder's host and how to wait instead.
    let refused_log = c.path().join("refused.log");
    let mut refused = bob_on_host(
        &team,
        c.path(),
        &server,
        Some("host-c"),
        &["--no-wait"],
        &refused_log,
    );
    let status = refused.wait().unwrap();
    let text = std::fs::read_to_string(&refused_log).unwrap();
    assert!(!status.success(), "{text}");
    assert!(
        text.contains("host-b") && text.contains("--no-wait"),
        "{text}"
    );
    // Without it: bob on host C says what it waits for, and takes over once host B's lease
    // lapses (host B "vanishes": SIGKILL, so nothing refreshes its key).
    let waiting_log = c.path().join("waiting.log");
    let waiting = bob_on_host(&team, c.path(), &server, Some("host-c"), &[], &waiting_log);
    let c_pid = waiting.id();
    wait_for("bob on host-c to say it waits", || {
        std::fs::read_to_string(&waiting_log)
            .unwrap_or_default()
            .contains("waiting for bob's lease on host host-b to lapse (")
    })
    .await;
    assert_eq!(nats_support::holder(&s, "bob").await, Some(b_pid));
    on_b.kill().unwrap();
    on_b.wait().unwrap();
    wait_for_async("bob on host-c to take the lapsed lease", async || {
        nats_support::holder(&s, "bob").await == Some(c_pid)
    })
    .await;
    end(waiting);
}

#[tokio::test]
async fn a_teammate_started_before_its_server_retries_saying_so_and_joins_once_it_is_up() {
    let mut nats = troupe_testkit::nats::NatsServer::start();
    let team = Team::on(&nats.url());
    nats.kill(); // down when the teammate starts
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    let log = ws.path().join("bob.log");
    let bob = bob_on_host(&team, ws.path(), &server, None, &[], &log);
    wait_for("bob to say it cannot reach the server and retries", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("cannot reach the team store") && text.contains("retrying in")
    })
    .await;
    nats.restart(); // up again on the same port
    let s = team.store(&ws.path().join(".probe")).await;
    let pid = bob.id();
    wait_for_async("bob to join once the server is up", async || {
        nats_support::holder(&s, "bob").await == Some(pid)
    })
    .await;
    end(bob);
}
