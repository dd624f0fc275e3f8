//! One lead per team: a second lead is refused, naming the running one; a lead that was killed
//! leaves nothing behind that blocks the next.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use std::process::Stdio;
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// Waits (bounded) until `n` model requests of the lead have arrived.
fn wait_for_lead_requests(server: &FakeServer, n: usize) {
    troupe_testkit::wait_until(
        "the lead calling the model",
        Duration::from_secs(30),
        || server.requests_for("lead").len() >= n,
    );
}

#[test]
fn a_second_lead_on_the_same_team_is_refused_until_the_first_is_gone() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        // Lead A's model call hangs: A is alive and holds its lease meanwhile.
        Step::delay(Duration::from_secs(120), Step::text("too late")),
        Step::text("a lead on another team"),
        Step::text("the next lead runs"),
    ]);
    let mut first = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "work slowly"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("troupe binary runs");
    wait_for_lead_requests(&server, 1);

    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "me too"]));
    assert_eq!(second.status.code(), Some(1));
    let err = stderr(&second);
    assert!(
        err.contains("another lead is already running on team 'default'")
            && err.contains(&format!("pid {}", first.id()))
            && err.contains("started 20"),
        "{err}"
    );
    // The REPL is a lead too.
    // (stdin is empty: were the REPL not refused, it would read end-of-input and exit 0.)
    let repl_out = run(&mut troupe(ws.path(), &server, Wire::Anthropic));
    assert_eq!(repl_out.status.code(), Some(1));
    common::assert_stderr_has(&repl_out, &format!("pid {}", first.id()));
    assert_eq!(
        server.requests_for("lead").len(),
        1,
        "refused leads never call the model"
    );

    // A lead of another team is not in the way.
    let other = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "elsewhere", "--team", "green"])
        .args(["--output-format", "json"]));
    assert!(other.status.success(), "{}", stderr(&other));
    assert!(String::from_utf8_lossy(&other.stdout).contains("a lead on another team"));

    // Killed without a chance to clean up: the kernel releases the lock with the process.
    first.kill().expect("SIGKILL the first lead");
    first.wait().expect("reap the first lead");
    let next = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "take over"]));
    assert!(next.status.success(), "{}", stderr(&next));
    assert_eq!(
        String::from_utf8_lossy(&next.stdout).trim(),
        "the next lead runs"
    );
}

/// `troupe` without `--team` (the tests' helper names one).
fn own_team(ws: &std::path::Path, server: &FakeServer) -> std::process::Command {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    cmd.env_remove("TROUPE_TEAM");
    cmd
}

#[test]
fn leads_without_a_team_share_the_workspace_and_team_commands_pick_the_running_one() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::delay(Duration::from_secs(120), Step::text("too late")),
        Step::text("a second session answers"),
        Step::delay(Duration::from_secs(120), Step::text("too late")),
    ]);
    let mut first = own_team(ws.path(), &server)
        .args(["-p", "work slowly"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("troupe binary runs");
    wait_for_lead_requests(&server, 1);

    // A second session in the same workspace runs beside it, on a team of its own.
    let second = run(own_team(ws.path(), &server).args(["-p", "me too"]));
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).trim(),
        "a second session answers"
    );

    // Commands from another terminal act on the only running team: the first lead's.
    let status = common::subcommand(ws.path(), &["team", "status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let value: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let first_team = value["team"].as_str().unwrap().to_string();
    // The first lead took the workspace's team; the second, finding it led, one of its own.
    assert_eq!(first_team, "default", "{value}");
    assert_eq!(value["lead_alive"], true, "{value}");

    // Two running: the command asks which, naming both.
    let mut third = own_team(ws.path(), &server)
        .args(["-p", "work slowly too"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("troupe binary runs");
    wait_for_lead_requests(&server, 3);
    let ask = common::subcommand(ws.path(), &["task", "list"]);
    assert_eq!(ask.status.code(), Some(1));
    let err = stderr(&ask);
    assert!(
        err.contains("2 teams are running here")
            && err.contains(&first_team)
            && err.contains("--team NAME"),
        "{err}"
    );
    let named = common::subcommand(ws.path(), &["team", "status", "--team", &first_team]);
    assert!(named.status.success(), "{}", stderr(&named));

    for child in [&mut first, &mut third] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
