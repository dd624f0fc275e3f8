//! Background commands through the real binary: the lead goes on working while one runs, is
//! woken by its notification when idle, kills it with its whole process group, and a headless
//! run waits for it (bounded by --team-timeout). A background command passes the same
//! permission gate as a foreground one. A teammate's runs show in `troupe team status`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, headless_bypass, headless_in_mode, repl, result_json, stderr, subcommand};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

/// Waits (bounded) until `cond` holds; for conditions in another process.
fn eventually(cond: impl FnMut() -> bool) -> bool {
    troupe_testkit::eventually(Duration::from_secs(30), cond)
}

/// The pid a command wrote to `path` (waited for).
fn pid_in(path: &Path) -> u32 {
    assert!(
        eventually(|| std::fs::read_to_string(path).is_ok_and(|t| t.ends_with('\n'))),
        "{} never written",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A command that waits for `gate` to exist, then `sleep 2 && echo done`.
fn gated(gate: &Path) -> String {
    format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; sleep 2 && echo done",
        gate.display()
    )
}

#[test]
fn the_idle_lead_wakes_for_the_notification_and_headless_waits_for_it() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "alpha");
    ws.write("b.txt", "beta");
    let gate: PathBuf = ws.path().join("gate");
    let server = FakeServer::start();
    let open = gate.clone();
    server.script(
        "lead",
        [
            Step::tool(
                "bash",
                json!({"command": gated(&gate), "run_in_background": true, "description": "slow build"}),
            ),
            // It keeps working while the command runs.
            Step::tool("read_file", json!({"path": "a.txt"})),
            Step::tool("read_file", json!({"path": "b.txt"})),
            // The turn ends with the command still running; only now may it finish.
            Step::dynamic(move |_| {
                std::fs::write(&open, "").unwrap();
                Reply::text("both files read; the build runs on")
            }),
            Step::text("the build finished: done"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "build it and read the files", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "the build finished: done");
    let requests = server.requests_for("lead");
    assert_eq!(
        requests.len(),
        5,
        "one more model call, for the notification"
    );
    let started = requests[1].last_tool_result().unwrap().0;
    assert!(started.contains("id bg-1"), "{started}");
    let log = started
        .split("its output goes to ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap()
        .trim_end_matches('.');
    assert!(log.ends_with("background/bg-1.log"), "{log}");
    assert!(
        log.contains(".troupe/sessions/"),
        "the log is in the session's folder: {log}"
    );
    assert!(requests[2].last_tool_result().unwrap().0.contains("alpha"));
    for r in &requests[..4] {
        let said = r.messages().iter().map(|m| m.text()).collect::<String>();
        assert!(!said.contains("<task_notification>"), "{said}");
    }
    let woken = requests[4].messages().last().unwrap().text();
    assert!(woken.contains("<task_notification>"), "{woken}");
    assert!(woken.contains("id: bg-1"), "{woken}");
    assert!(woken.contains("command: while"), "{woken}");
    assert!(woken.contains("status: exited with code 0"), "{woken}");
    assert!(woken.contains("done"), "the tail of its output: {woken}");
    assert_eq!(std::fs::read_to_string(log).unwrap(), "done\n");
}

#[test]
fn kill_background_ends_the_process_group() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let (child_file, shell_file) = (ws.path().join("child.pid"), ws.path().join("shell.pid"));
    let pids: Arc<Mutex<Vec<u32>>> = Arc::default();
    let seen = pids.clone();
    let alive_after_kill: Arc<Mutex<Vec<bool>>> = Arc::default();
    let found = alive_after_kill.clone();
    server.script(
        "lead",
        [
            Step::tool(
                "bash",
                json!({"command": "sleep 300 & echo $! > child.tmp; mv child.tmp child.pid; echo $$ > shell.tmp; mv shell.tmp shell.pid; wait",
                       "run_in_background": true}),
            ),
            Step::dynamic(move |_| {
                let both = [pid_in(&child_file), pid_in(&shell_file)];
                assert!(both.iter().all(|p| alive(*p)), "{both:?} run");
                seen.lock().unwrap().extend(both);
                Reply::tool("kill_background", json!({"id": "bg-1"}))
            }),
            Step::dynamic(move |req| {
                let (result, is_error) = req.last_tool_result().unwrap();
                assert!(!is_error && result.contains("bg-1 was killed"), "{result}");
                let pids = pids.lock().unwrap().clone();
                found.lock().unwrap().extend(pids.iter().map(|p| alive(*p)));
                Reply::text("stopped it")
            }),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "start and stop a server", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "stopped it");
    assert_eq!(
        *alive_after_kill.lock().unwrap(),
        vec![false, false],
        "kill_background returned before the group was gone"
    );
    assert_eq!(
        server.requests_for("lead").len(),
        3,
        "a kill it asked for wakes nobody"
    );
}

#[test]
fn a_background_command_passes_the_same_permission_gate() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "bash",
            json!({"command": "touch escaped", "run_in_background": true}),
        ),
        Step::text("refused"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "go", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(is_error, "{result}");
    assert!(!result.contains("bg-1"), "it never started: {result}");
    assert!(!ws.path().join("escaped").exists());
}

#[test]
fn a_headless_run_waits_no_longer_than_its_timeout_and_says_what_still_ran() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "bash",
            json!({"command": "echo $$ > shell.tmp; mv shell.tmp shell.pid; sleep 300", "run_in_background": true}),
        ),
        Step::text("started"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &["--team-timeout", "1"]);
    assert!(!out.status.success());
    let result = result_json(&out);
    let text = result["result"].as_str().unwrap();
    common::assert_contains(
        text,
        "the lead's background command bg-1 (echo $$ > shell.tmp;",
    );
    let shell = pid_in(&ws.path().join("shell.pid"));
    assert!(!alive(shell), "the command {shell} outlived the run");
}

#[test]
fn a_teammate_wakes_for_its_notification_and_team_status_lists_the_command() {
    let ws = TempWorkspace::new();
    let gate = ws.path().join("gate");
    let server = FakeServer::start();
    common::lead_spawns(
        &server,
        json!({"name": "alice", "role": "builder", "prompt": "build in the background"}),
    );
    server.set_fallback(|_| Step::text("ok"));
    let root = ws.path().to_path_buf();
    let keep: Arc<Mutex<String>> = Arc::default();
    let shown = keep.clone();
    let open = gate.clone();
    server.script(
        "alice",
        [
            Step::tool(
                "bash",
                json!({"command": gated(&gate), "run_in_background": true}),
            ),
            Step::dynamic(move |_| {
                // While it runs, another terminal sees it on the roster.
                let mut text = String::new();
                let listed = eventually(|| {
                    let out = subcommand(&root, &["team", "status"]);
                    text = String::from_utf8_lossy(&out.stdout).into_owned();
                    text.contains("background commands:")
                });
                assert!(listed, "troupe team status never listed it: {text}");
                *shown.lock().unwrap() = text;
                std::fs::write(&open, "").unwrap();
                Reply::text("started the build")
            }),
            Step::text("alice saw the build finish"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "get alice building", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = keep.lock().unwrap().clone();
    let listed = status
        .split("background commands:")
        .nth(1)
        .and_then(|table| table.lines().find(|l| l.starts_with("alice")))
        .unwrap_or_else(|| panic!("alice's command is listed: {status}"));
    assert!(
        listed.contains("bg-1") && listed.contains("running"),
        "{listed}"
    );
    let alice = server.requests_for("alice");
    assert_eq!(alice.len(), 3, "alice woke once, for the notification");
    let woken = alice[2].messages().last().unwrap().text();
    assert!(
        woken.contains("<task_notification>") && woken.contains("id: bg-1"),
        "{woken}"
    );
    // The lead heard of both work phases, and waited for the second.
    let lead_text: String = server
        .requests_for("lead")
        .iter()
        .map(|r| r.all_text())
        .collect();
    common::assert_contains(&lead_text, "alice saw the build finish");
    let roster = subcommand(ws.path(), &["team", "status", "--json"]);
    let roster: serde_json::Value = serde_json::from_slice(&roster.stdout).unwrap();
    assert!(roster["members"][0].get("background").is_none(), "{roster}");
}

#[test]
fn bashes_lists_the_leads_commands_and_exit_ends_them() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "bash",
            json!({"command": "echo $$ > shell.tmp; mv shell.tmp shell.pid; sleep 300", "run_in_background": true}),
        ),
        // The turn ends only once the command has started (the REPL reads all its piped
        // input at once, so /exit could otherwise come before the shell wrote its pid).
        Step::tool(
            "bash",
            json!({"command": "while [ ! -e shell.pid ]; do sleep 0.01; done"}),
        ),
        Step::text("started it"),
    ]);
    let out = repl(
        ws.path(),
        &server,
        &["--permission-mode", "bypassPermissions"],
        "start a server\n/bashes\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("bg-1"))
        .unwrap_or_else(|| panic!("/bashes lists bg-1: {text}"));
    assert!(
        row.contains("running") && row.contains("sleep 300"),
        "{row}"
    );
    let shell = pid_in(&ws.path().join("shell.pid"));
    assert!(
        !alive(shell),
        "the lead's command {shell} outlived the REPL"
    );
}

#[test]
fn a_slow_foreground_command_moves_to_the_background_past_the_threshold() {
    let ws = TempWorkspace::new();
    let gate = ws.path().join("gate");
    let server = FakeServer::start();
    let open = gate.clone();
    let command = format!(
        "echo started; while [ ! -e '{}' ]; do sleep 0.05; done; echo finished",
        gate.display()
    );
    server.script(
        "lead",
        [
            Step::tool("bash", json!({ "command": command })),
            Step::dynamic(move |req| {
                let (result, is_error) = req.last_tool_result().unwrap();
                assert!(!is_error, "{result}");
                common::assert_contains(&result, "moved to the background as bg-1");
                assert!(result.contains("Output so far:\nstarted"), "{result}");
                std::fs::write(&open, "").unwrap();
                Reply::text("it runs in the background")
            }),
            Step::text("it finished"),
        ],
    );
    let out = headless_bypass(
        ws.path(),
        &server,
        "run the slow thing",
        &["--settings", r#"{"bash_auto_background": 0.3}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "it finished");
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 3);
    let woken = requests[2].messages().last().unwrap().text();
    assert!(woken.contains("status: exited with code 0"), "{woken}");
    let tail = woken.split("not yet read):").nth(1).unwrap_or_default();
    assert!(
        tail.contains("finished") && !tail.contains("started"),
        "the notification quotes only what the model has not seen: {woken}"
    );
}
