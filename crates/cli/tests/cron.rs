//! Scheduled prompts through the real binary: a job fires once into an idle REPL lead (in
//! tmux), two troupe processes on one workspace fire each job once, a job missed while nothing
//! ran fires at the next start marked late, jobs survive the process that made them, and a bad
//! schedule is a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::tmux::Tmux;
use common::{headless_bypass, result_json, stderr, subcommand, troupe};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// Waits (bounded) until `cond` holds; for conditions in another process.
fn eventually(cond: impl FnMut() -> bool) -> bool {
    troupe_testkit::eventually(Duration::from_secs(40), cond)
}

/// The jobs in the workspace's cron file.
fn jobs(ws: &Path) -> Vec<Value> {
    match std::fs::read(ws.join(".troupe/cron.json")) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).unwrap()["jobs"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// The prompts the scheduler mailed on `team`, from its event log.
fn fired(ws: &Path, team: &str) -> Vec<String> {
    let path = ws.join(format!(".troupe/teams/{team}/events.jsonl"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["agent"] == "cron" && e["kind"] == "message_sent")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_job_fires_once_into_the_idle_repl_lead() {
    if !common::tmux::available() {
        return;
    }
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "schedule_cron",
            json!({"schedule": "in 2s", "prompt": "the meeting starts now"}),
        ),
        Step::text("I will remind you in two seconds."),
        Step::text("Reminder: the meeting starts now!"),
    ]);
    let tmux = Tmux::start(ws.path(), &server, &[]);
    tmux.wait_for("/help for commands");
    tmux.type_line("remind me of the meeting in 2 seconds");
    tmux.wait_for("I will remind you in two seconds.");
    // Nobody types: the scheduled prompt wakes the lead at the prompt.
    tmux.wait_for("Reminder: the meeting starts now!");
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 3);
    let scheduled = requests[1].last_tool_result().unwrap();
    assert!(
        !scheduled.1 && scheduled.0.contains("Scheduled cron-"),
        "{scheduled:?}"
    );
    let woken = requests[2].messages().last().unwrap().text();
    common::assert_contains(&woken, "[Scheduled] the meeting starts now");
    assert!(!woken.contains("late"), "it fired on time: {woken}");
    // The job file is rewritten under its lock right after the delivery that woke the lead,
    // which may already have answered.
    assert!(
        eventually(|| jobs(ws.path()).is_empty()),
        "a one-shot job is gone once fired"
    );
    // The REPL without --team works on the workspace's team.
    let team = common::only_team(ws.path()).expect("the REPL made its team");
    assert_eq!(team, "default");
    assert_eq!(fired(ws.path(), &team).len(), 1);
    tmux.type_line("/exit");
    assert!(
        eventually(|| tmux.gone()),
        "the REPL did not exit:\n{}",
        tmux.screen()
    );
    assert_eq!(server.requests_for("lead").len(), 3, "it fired once");
}

#[test]
fn two_processes_on_one_workspace_fire_each_job_once() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("noted"));
    let mut leads: Vec<_> = ["default", "other"]
        .iter()
        .map(|team| {
            troupe(ws.path(), &server, Wire::Anthropic)
                .args(["--team", team])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let lease = |team: &str| ws.path().join(format!(".troupe/teams/{team}/members"));
    assert!(eventually(
        || lease("default").exists() && lease("other").exists()
    ));
    for i in 0..6 {
        for team in ["default", "other"] {
            let when = format!("in {}s", 1 + i % 3);
            let prompt = format!("{team} ping {i}");
            let out = subcommand(ws.path(), &["cron", "add", &when, &prompt, "--team", team]);
            assert!(out.status.success(), "{}", stderr(&out));
        }
    }
    assert!(
        eventually(|| jobs(ws.path()).is_empty()),
        "{:?}",
        jobs(ws.path())
    );
    for team in ["default", "other"] {
        let mut sent = fired(ws.path(), team);
        sent.sort();
        let expected: Vec<String> = (0..6)
            .map(|i| format!("message → lead: [Scheduled] {team} ping {i}"))
            .collect();
        assert_eq!(sent, expected, "each job of {team} fired exactly once");
    }
    // Each lead was woken for its own team's prompts.
    assert!(eventually(|| {
        let asked = |team: &str| {
            server
                .journal()
                .iter()
                .any(|r| r.all_text().contains(&format!("[Scheduled] {team} ping")))
        };
        asked("default") && asked("other")
    }));
    for mut lead in leads.drain(..) {
        lead.stdin.take().unwrap().write_all(b"/exit\n").unwrap();
        let out = lead.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_job_missed_while_nothing_ran_fires_once_at_the_next_start_marked_late() {
    let ws = TempWorkspace::new();
    let out = subcommand(ws.path(), &["cron", "add", "in 1h", "water the plants"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("scheduled cron-"));
    // An hour passes with no troupe running.
    let path = ws.path().join(".troupe/cron.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let due = file["jobs"][0]["next_ms"].as_u64().unwrap() - 2 * 3_600_000;
    file["jobs"][0]["next_ms"] = json!(due);
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let listed = subcommand(ws.path(), &["cron", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("water the plants"));

    let server = FakeServer::start();
    server.script("lead", [Step::text("watered them")]);
    let out = headless_bypass(ws.path(), &server, "hello", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "watered them");
    let first = server.requests_for("lead")[0].all_text();
    assert!(first.contains("[Scheduled] water the plants"), "{first}");
    assert!(first.contains("(late: this was due at"), "{first}");
    assert!(jobs(ws.path()).is_empty());

    // The next start has nothing left to fire.
    server.script("lead", [Step::text("nothing scheduled")]);
    let out = headless_bypass(ws.path(), &server, "again", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!server.requests_for("lead")[1]
        .all_text()
        .contains("[Scheduled]"));
}

#[test]
fn jobs_survive_their_process_and_bad_schedules_are_clear_errors() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "schedule_cron",
            json!({"schedule": "61 * * * *", "prompt": "never"}),
        ),
        Step::tool(
            "schedule_cron",
            json!({"schedule": "0 9 * * MON-FRI", "prompt": "stand-up notes", "to": "nobody"}),
        ),
        Step::tool(
            "schedule_cron",
            json!({"schedule": "0 9 * * MON-FRI", "prompt": "stand-up notes"}),
        ),
        Step::tool(
            "schedule_cron",
            json!({"schedule": "in 3h", "prompt": "go home"}),
        ),
        Step::tool("list_crons", json!({})),
        Step::text("scheduled"),
    ]);
    let out = headless_bypass(ws.path(), &server, "schedule things", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results: Vec<(String, bool)> = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0].0.contains("bad schedule '61 * * * *'"),
        "{}",
        results[0].0
    );
    assert!(
        results[0].0.contains("five-field cron expression"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].1 && results[1].0.contains("'nobody' is not on team"),
        "{}",
        results[1].0
    );
    assert!(
        !results[2].1 && results[2].0.contains("recurring '0 9 * * MON-FRI'"),
        "{}",
        results[2].0
    );
    assert!(
        results[4].0.contains("stand-up notes") && results[4].0.contains("go home"),
        "{}",
        results[4].0
    );

    // The process is gone; the jobs are not.
    let listed = subcommand(ws.path(), &["cron", "list", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let standup = listed
        .iter()
        .find(|j| j["prompt"] == "stand-up notes")
        .unwrap();
    assert_eq!(standup["kind"], "recurring");
    assert_eq!(standup["to"], "lead");
    let id = standup["id"].as_str().unwrap();
    let removed = subcommand(ws.path(), &["cron", "remove", id]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    assert_eq!(jobs(ws.path()).len(), 1);
    let again = subcommand(ws.path(), &["cron", "remove", id]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains(&format!("no scheduled prompt '{id}'")));

    let bad = subcommand(ws.path(), &["cron", "add", "every day", "x"]);
    assert!(!bad.status.success());
    common::assert_stderr_has(&bad, "bad schedule 'every day'");
}

#[test]
fn a_job_for_a_teammate_reaches_its_mailbox_and_wakes_it_after_a_restart() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "spawn_teammate",
            json!({"name": "alice", "role": "ops", "prompt": "wait for reminders"}),
        ),
        Step::tool(
            "schedule_cron",
            json!({"schedule": "in 1h", "prompt": "rotate the logs", "to": "alice"}),
        ),
        Step::text("alice will be reminded"),
    ]);
    server.script("alice", [Step::text("waiting")]);
    server.set_fallback(|_| Step::text("ok"));
    let out = headless_bypass(ws.path(), &server, "set it up", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = jobs(ws.path()).pop().expect("the job outlived the run");
    assert_eq!(job["to"], "alice");
    // Its time comes while nothing runs; the next run fires it into alice's mailbox and the
    // respawned alice wakes for it.
    let path = ws.path().join(".troupe/cron.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["jobs"][0]["next_ms"] = json!(troupe_cron_now() - 1_000);
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    server.script("alice", [Step::text("logs rotated")]);
    let out = headless_bypass(ws.path(), &server, "anything new?", &["--continue"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let alice = server.requests_for("alice");
    let woken = alice.last().unwrap().all_text();
    assert!(woken.contains("[Scheduled] rotate the logs"), "{woken}");
    assert!(jobs(ws.path()).is_empty());
    let lead: String = server
        .requests_for("lead")
        .iter()
        .map(|r| r.all_text())
        .collect();
    assert!(lead.contains("logs rotated"), "alice reported to the lead");
}

/// Milliseconds since the Unix epoch, as the cron file counts them.
fn troupe_cron_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
