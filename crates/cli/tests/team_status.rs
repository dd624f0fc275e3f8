//! `troupe team status [--json]` and `troupe team log --follow` from another terminal: JSON
//! for scripts with the roster, pending requests, board and usage; the human table aligned,
//! coloured in a terminal and plain when piped or under `NO_COLOR`; the log followed through
//! change notifications.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;

use common::{stderr, subcommand, StdoutLines};
use pty_support::Pty;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use troupe_protocol::{AgentStatus, Event, EventKind, Member, Request, RequestKind, Usage};
use troupe_store::SharedStore;
use troupe_testkit::TempWorkspace;

const LIMIT: Duration = Duration::from_secs(60);

/// A team made through the store: bob (planner, sonnet, waiting for his plan), carol
/// (failed), a pending plan request and one task.
async fn team(ws: &Path) -> (SharedStore, Request) {
    let created = subcommand(ws, &["task", "create", "write the parser"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let s = troupe_store::file::open(&ws.join(".troupe"), "default").unwrap();
    s.update_roster(&mut |r| {
        let mut bob = Member::new("bob", "planner", 1, 1);
        bob.status = AgentStatus::Idle;
        bob.model = Some("claude-sonnet-4-5".into());
        bob.usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            ..Usage::default()
        };
        let mut carol = Member::new("carol", "tester", 1, 1);
        carol.status = AgentStatus::Failed;
        carol.usage.input_tokens = 500;
        r.members = vec![bob, carol];
    })
    .await
    .unwrap();
    let plan = Request::open(
        RequestKind::Plan,
        "bob",
        "lead",
        0,
        json!({"plan": "split the parser"}),
        1,
        None,
    );
    s.create_request(&plan).await.unwrap();
    (s, plan)
}

fn status_json(ws: &Path) -> Value {
    let out = subcommand(ws, &["team", "status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn status_json_has_the_roster_pending_requests_board_and_usage() {
    let ws = TempWorkspace::new();
    let (s, plan) = team(ws.path()).await;
    let v = status_json(ws.path());
    assert_eq!(v["lead_alive"], false);
    let bob = &v["members"][0];
    assert_eq!(
        (bob["name"].as_str(), bob["status"].as_str()),
        (Some("bob"), Some("idle"))
    );
    assert_eq!(
        bob["live_status"], "gone",
        "no live process holds bob's lease: {bob}"
    );
    assert_eq!(bob["alive"], false);
    assert_eq!(v["members"][1]["live_status"], "failed");
    assert_eq!(v["requests"].as_array().unwrap().len(), 1);
    assert_eq!(v["requests"][0]["id"], plan.id.as_str());
    assert_eq!(v["tasks"][0]["subject"], "write the parser");
    assert_eq!(v["usage"]["total_tokens"], 1_100_500);
    // Sonnet list prices: $3 in, $15 out per million tokens; carol's model is unknown.
    assert!(
        (v["usage"]["cost_usd"].as_f64().unwrap() - 4.5).abs() < 1e-9,
        "{}",
        v["usage"]
    );

    // While a live process holds his lease, bob is waiting for his plan.
    let lease = s.acquire_lease("bob").await.unwrap();
    let v = status_json(ws.path());
    assert_eq!(v["members"][0]["live_status"], "waiting");
    assert_eq!(
        v["members"][0]["waiting_for"]["request_id"],
        plan.id.as_str()
    );
    assert_eq!(v["members"][0]["waiting_for"]["kind"], "plan");
    drop(lease);
}

#[tokio::test]
async fn status_prices_with_the_workspace_pricing_setting_like_the_lead() {
    let ws = TempWorkspace::new();
    team(ws.path()).await;
    ws.write(
        ".troupe/settings.json",
        r#"{"pricing": {"claude-sonnet-4-5": {"input": 1, "output": 10}}}"#,
    );
    // bob: 1M tokens in at $1, 100k out at $10 per million (carol's model has no price).
    let v = status_json(ws.path());
    assert!(
        (v["usage"]["cost_usd"].as_f64().unwrap() - 2.0).abs() < 1e-9,
        "{}",
        v["usage"]
    );
}

#[tokio::test]
async fn human_status_is_plain_when_piped_and_coloured_in_a_terminal() {
    let ws = TempWorkspace::new();
    let (s, plan) = team(ws.path()).await;
    let _lease = s.acquire_lease("bob").await.unwrap();

    let out = subcommand(ws.path(), &["team", "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!out.stdout.contains(&0x1b), "piped output is plain");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("NAME")).unwrap();
    let bob = lines.iter().find(|l| l.starts_with("bob ")).unwrap();
    let at = header.find("STATUS").unwrap();
    assert_eq!(
        &bob[at..at + "waiting (plan)".len()],
        "waiting (plan)",
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("lead ")),
        "a lead row: {text}"
    );
    assert!(
        text.contains("1 pending request") && text.contains(&plan.id),
        "{text}"
    );
    assert!(text.contains("troupe team approve|reject <id>"), "{text}");

    let status_in_pty = |no_color: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
        cmd.current_dir(ws.path())
            .args(["team", "status"])
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let mut pty = Pty::spawn(cmd, 40, 200);
        assert!(pty.wait_exit(LIMIT).unwrap().success());
        pty.wait_for_text("carol", LIMIT);
        pty.raw()
    };
    let coloured = status_in_pty(None);
    let shown = String::from_utf8_lossy(&coloured);
    assert_eq!(
        style_of(&coloured, "waiting (plan)"),
        Some((vt100::Color::Idx(3), true)),
        "bold yellow: {shown:?}"
    );
    assert_eq!(
        style_of(&coloured, "failed"),
        Some((vt100::Color::Idx(1), true)),
        "bold red: {shown:?}"
    );
    let plain = status_in_pty(Some("1"));
    assert!(
        !plain.contains(&0x1b),
        "NO_COLOR: {:?}",
        String::from_utf8_lossy(&plain)
    );
}

/// The colour and boldness of the first cell of `needle` on the screen that `raw` draws.
fn style_of(raw: &[u8], needle: &str) -> Option<(vt100::Color, bool)> {
    let mut parser = vt100::Parser::new(40, 200, 0);
    parser.process(raw);
    let screen = parser.screen();
    let (row, line) = screen
        .rows(0, 200)
        .enumerate()
        .find(|(_, line)| line.contains(needle))?;
    let col = line[..line.find(needle)?].chars().count();
    let cell = screen.cell(u16::try_from(row).ok()?, u16::try_from(col).ok()?)?;
    Some((cell.fgcolor(), cell.bold()))
}

#[tokio::test]
async fn log_follow_prints_each_append_as_it_happens() {
    let ws = TempWorkspace::new();
    let (s, _) = team(ws.path()).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws.path())
        .args(["team", "log", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = StdoutLines::of(&mut child);
    // What was there before it started (the task's creation), then each new event.
    lines.wait_for("write the parser", LIMIT);
    for i in 0..3 {
        let detail = format!("follow-me-{i}");
        s.record(&Event::new(EventKind::Error, Some("lead"), &detail, 1))
            .await
            .unwrap();
        assert!(lines.wait_for(&detail, LIMIT).contains("lead error"));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
