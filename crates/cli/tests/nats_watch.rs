//! Following a team on a NATS server from another terminal: `troupe team watch` waits for the
//! team, then shows its board and events as they change, and `troupe team log --follow` prints
//! each event as it is appended — both woken by the server's change notifications (no file of
//! the team on this machine).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod nats_support;
mod pty_support;

use common::StdoutLines;
use nats_support::{Team, BOUND};
use pty_support::Pty;
use std::path::Path;
use std::process::{Command, Stdio};
use troupe_protocol::{Event, EventKind};
use troupe_store::{NewTask, SharedStore};
use troupe_testkit::TempWorkspace;

fn troupe_cmd(ws: &Path, team: &Team, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.current_dir(ws)
        .args(args)
        .args(team.args())
        .env("USER", "tester")
        .env("TERM", "xterm-256color")
        .env("HOME", ws.join(".home"))
        .env_remove("NO_COLOR")
        .env_remove("TROUPE_LOG")
        .env_remove("TROUPE_STORE");
    cmd
}

/// What a lead does first: the roster (the team exists from then on).
async fn create_team(store: &SharedStore) {
    store
        .update_roster(&mut |r| r.lead = "lead".into())
        .await
        .unwrap();
}

async fn event(store: &SharedStore, detail: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    store
        .record(&Event::new(EventKind::Error, Some("lead"), detail, now))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_dashboard_waits_for_a_team_on_the_server_then_follows_it() {
    let ws = TempWorkspace::new();
    let team = Team::new();
    let mut dash = Pty::spawn(troupe_cmd(ws.path(), &team, &["team", "watch"]), 40, 140);
    dash.wait_for_text(&format!("Waiting for team '{}'", team.name), BOUND);

    let store = team.store(&ws.path().join(".troupe")).await;
    create_team(&store).await;
    store
        .create_task(&NewTask {
            subject: "write the docs".into(),
            description: String::new(),
            blocked_by: Vec::new(),
            created_by: "lead".into(),
        })
        .await
        .unwrap();
    dash.wait_for("the board with the new task", BOUND, |s| {
        s.contains("3 Board · 1 tasks") && s.contains("write the docs")
    });
    event(&store, "seen-through-the-server").await;
    dash.wait_for_text("seen-through-the-server", BOUND);

    dash.send("q");
    assert!(dash.wait_exit(BOUND).expect("q ends it").success());
}

#[tokio::test]
async fn log_follow_prints_each_event_appended_on_the_server() {
    let ws = TempWorkspace::new();
    let team = Team::new();
    let store = team.store(&ws.path().join(".troupe")).await;
    create_team(&store).await;
    event(&store, "before-following").await;
    let mut child = troupe_cmd(ws.path(), &team, &["team", "log", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = StdoutLines::of(&mut child);
    lines.wait_for("before-following", BOUND);
    for i in 0..3 {
        let detail = format!("follow-me-{i}");
        event(&store, &detail).await;
        assert!(lines.wait_for(&detail, BOUND).contains("lead error"));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
