//! `troupe team watch` end to end, in a real pseudo-terminal against scripted teams: it waits
//! for a team that does not exist yet, follows a teammate from working to idle, approves a
//! plan from the dashboard (the teammate then proceeds), and survives a corrupt event line.
//! Every wait is on what the emulated screen shows, bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;
mod pty_support;

use common::{subcommand, troupe};
use protocol_support::{calls, has_mail, spawn, store};
use pty_support::Pty;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use troupe_protocol::{Event, EventKind, RequestKind, RequestStatus};
use troupe_store::RequestFilter;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

const LIMIT: Duration = Duration::from_secs(90);

/// `troupe team watch --team default` in `ws`, as the person "tester", in a 140×40
/// terminal (a named team is waited for until it exists).
fn watch(ws: &Path) -> Pty {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.current_dir(ws)
        .args(["team", "watch", "--team", "default"])
        .env("USER", "tester")
        .env("TERM", "xterm-256color")
        .env("HOME", ws.join(".home"))
        .env_remove("NO_COLOR")
        .env_remove("TROUPE_LOG");
    Pty::spawn(cmd, 40, 140)
}

/// The roster row of `name` on the screen.
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    let start = format!("│{name} ");
    screen.lines().find(|l| l.starts_with(&start))
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

#[tokio::test]
async fn the_dashboard_follows_bob_and_his_plan_is_approved_from_it() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    // Bob's first step reads a FIFO, so he stays "working" until the test lets him go on.
    mkfifo(&ws.path().join("gate"));
    server.set_fallback(|rec| {
        let step = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("bob", "Add greeting.txt once your plan is approved.", true),
            ),
            "bob" if calls(rec, "bash").is_empty() => {
                Reply::tool("bash", json!({"command": "cat gate"}))
            }
            "bob" if calls(rec, "submit_plan").is_empty() => Reply::tool(
                "submit_plan",
                json!({"plan": "Create greeting.txt containing hello."}),
            ),
            "bob"
                if has_mail(rec, "plan_approval_response", "user:tester")
                    && calls(rec, "write_file").is_empty() =>
            {
                Reply::tool(
                    "write_file",
                    json!({"path": "greeting.txt", "content": "hello"}),
                )
            }
            "bob" if !calls(rec, "write_file").is_empty() => Reply::text("greeting written"),
            "bob" => Reply::text("plan submitted; waiting for approval"),
            _ => Reply::text("noted"),
        };
        Step::reply(step)
    });

    // Started before the team exists: it says it waits.
    let mut dash = watch(ws.path());
    dash.wait_for_text("Waiting for team 'default' to exist", LIMIT);

    // The lead in a REPL whose stdin stays open: the team lives until the test ends it.
    let mut lead = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["--permission-mode", "acceptEdits"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lead_in = lead.stdin.take().unwrap();
    lead_in.write_all(b"start the team\n").unwrap();
    lead_in.flush().unwrap();

    let screen = dash.wait_for("bob working on `cat gate`", LIMIT, |s| {
        row(s, "bob").is_some_and(|r| r.contains("working") && r.contains("cat gate"))
    });
    assert!(
        row(&screen, "lead").is_some_and(|r| r.contains("live")),
        "{screen}"
    );

    // Let bob go on: he submits his plan and goes idle, waiting for it.
    std::fs::OpenOptions::new()
        .write(true)
        .open(ws.path().join("gate"))
        .unwrap()
        .write_all(b"go\n")
        .unwrap();
    // The roster says what he waits for; the traffic shows him going idle.
    let screen = dash.wait_for("bob idle, waiting for his plan", LIMIT, |s| {
        row(s, "bob").is_some_and(|r| r.contains("waiting (plan)")) && s.contains("bob idle")
    });
    assert!(screen.contains("1 pending"), "{screen}");

    // The person reads the plan in full and approves it, with a note.
    dash.send("2");
    dash.send("\r");
    dash.wait_for_text("Create greeting.txt containing hello.", LIMIT);
    dash.send("a");
    dash.wait_for_text("reason (optional)", LIMIT);
    dash.send("go ahead");
    dash.send("\r");
    dash.wait_for_text("approved plan request", LIMIT);

    // Bob proceeds: he writes the file and goes idle again.
    let screen = dash.wait_for("bob idle after his work", LIMIT, |s| {
        row(s, "bob").is_some_and(|r| r.contains("idle") && !r.contains("waiting"))
            && s.contains("0 pending")
    });
    assert_eq!(ws.read("greeting.txt"), "hello", "{screen}");
    let plans = store(ws.path())
        .list_requests(&RequestFilter {
            kind: Some(RequestKind::Plan),
            ..RequestFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].status, RequestStatus::Approved);
    let answer = plans[0].response.clone().unwrap();
    assert_eq!(
        (answer.by.as_str(), answer.reason.as_deref()),
        ("user:tester", Some("go ahead"))
    );
    assert!(
        store(ws.path())
            .roster()
            .await
            .unwrap()
            .get("bob")
            .unwrap()
            .plan_approved
    );
    // The lead is told that the person answered in its place.
    assert!(server
        .requests_for("lead")
        .iter()
        .any(|r| r.all_text().contains("user:tester approved bob's plan")));

    dash.send("q");
    let status = dash.wait_exit(LIMIT).expect("q ends the dashboard");
    assert!(status.success(), "{status:?}");
    drop(lead_in);
    lead.wait().unwrap();
}

#[tokio::test]
async fn the_dashboard_waits_for_a_missing_team_and_survives_a_corrupt_event_line() {
    let ws = TempWorkspace::new();
    let mut dash = watch(ws.path());
    dash.wait_for_text("Waiting for team 'default' to exist", LIMIT);

    // A person puts a task on the board: that creates the team, and the dashboard goes live.
    let created = subcommand(ws.path(), &["task", "create", "write the docs"]);
    assert!(created.status.success(), "{}", common::stderr(&created));
    dash.wait_for("the board with the new task", LIMIT, |s| {
        s.contains("3 Board · 1 tasks") && s.contains("write the docs")
    });

    // A torn line in the event log is skipped and counted; what follows it still shows.
    let events = ws.path().join(".troupe/teams/default/events.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&events)
        .unwrap()
        .write_all(b"{\"ts\": 1, \"kind\": \n")
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    store(ws.path())
        .record(&Event::new(
            EventKind::Error,
            Some("lead"),
            "after the corrupt line",
            now,
        ))
        .await
        .unwrap();
    let screen = dash.wait_for("the event after the corrupt line", LIMIT, |s| {
        s.contains("after the corrupt line") && s.contains("1 corrupt event line(s) skipped")
    });
    assert!(screen.contains("4 Traffic"), "{screen}");

    dash.send("q");
    assert!(dash.wait_exit(LIMIT).expect("q ends it").success());
}

#[test]
fn watch_refuses_without_a_terminal() {
    let ws = TempWorkspace::new();
    let out = subcommand(ws.path(), &["team", "watch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        common::stderr(&out).contains("needs a terminal"),
        "{}",
        common::stderr(&out)
    );
}
