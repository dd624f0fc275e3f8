//! Running hook commands as real processes: stdin, environment and working directory, exit
//! codes, parallel runs, and timeouts that kill the hook's whole process group.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

#[path = "../../tools/tests/common/procs.rs"]
mod procs;

use procs::alive;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_hooks::{run_hook, Ending, HookCommand, HookEvent, HookReport, Hooks};
use troupe_settings::Settings;

fn hook(command: &str, timeout_secs: u64) -> HookCommand {
    HookCommand::command(command, Duration::from_secs(timeout_secs))
}

/// A runtime for one test, in a process set up as troupe sets itself up: the child subreaper,
/// so a daemon a hook leaves behind stays in this process's tree, where ending the hook finds
/// it even while it is between fork and exec (as a machine under load often shows it).
fn runtime() -> tokio::runtime::Runtime {
    troupe_tools::process::become_subreaper().unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn pids(dir: &Path, name: &str) -> Vec<u32> {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[test]
fn a_hook_reads_its_input_and_finds_the_project_directory() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let command = r#"cat > input.json; printf '%s|%s|%s' "$CLAUDE_PROJECT_DIR" "$TROUPE_PROJECT_DIR" "$(pwd)" > env.txt; echo out; echo err >&2; exit 3"#;
    let run = runtime().block_on(run_hook(&hook(command, 10), br#"{"a": 1}"#, &project));
    assert_eq!(run.ending, Ending::Exited(3));
    assert_eq!(run.stdout, "out\n");
    assert_eq!(run.stderr, "err\n");
    assert_eq!(
        std::fs::read_to_string(project.join("input.json")).unwrap(),
        r#"{"a": 1}"#
    );
    let p = project.display().to_string();
    assert_eq!(
        std::fs::read_to_string(project.join("env.txt")).unwrap(),
        format!("{p}|{p}|{p}")
    );
}

#[test]
fn a_hook_that_ignores_a_large_input_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    // Far more than a pipe holds: a writer waiting for the hook to read would never finish.
    let input = vec![b'x'; 4 << 20];
    let run = runtime().block_on(run_hook(&hook("exit 0", 10), &input, dir.path()));
    assert_eq!(run.ending, Ending::Exited(0));
}

#[test]
fn a_timed_out_hook_is_killed_with_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let command = "sleep 300 & echo $! > pids; echo $$ >> pids; sleep 300";
    let run = runtime().block_on(run_hook(&hook(command, 1), b"{}", dir.path()));
    assert_eq!(run.ending, Ending::TimedOut(Duration::from_secs(1)));
    let pids = pids(dir.path(), "pids");
    assert_eq!(pids.len(), 2, "the hook wrote both pids");
    for pid in pids {
        assert!(
            !alive(pid),
            "process {pid} of the timed-out hook is still alive"
        );
    }
}

#[test]
fn what_a_hook_leaves_running_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // A daemon that left the group (setsid) and closed the hook's pipes still carries its marker.
    let command = "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pids; exit 0";
    let run = runtime().block_on(run_hook(&hook(command, 10), b"{}", dir.path()));
    assert_eq!(run.ending, Ending::Exited(0));
    let pids = pids(dir.path(), "pids");
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]), "the hook's leftover process outlived it");
}

#[test]
fn matching_hooks_run_in_parallel_and_every_run_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // Each hook waits (bounded) for the other's mark: run one after the other, the first would
    // wait in vain and time out.
    let wait_for = |mine: &str, theirs: &str| {
        format!(
            "touch {mine}; i=0; while [ ! -e {theirs} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; [ -e {theirs} ] && echo saw-{theirs}"
        )
    };
    let settings = Settings::parse(
        &json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": wait_for("a", "b"), "timeout": 30}]},
            {"matcher": "bash|Read", "hooks": [{"type": "command", "command": wait_for("b", "a"), "timeout": 30}]},
            {"matcher": "Write", "hooks": [{"type": "command", "command": "echo never"}]}
        ]}})
        .to_string(),
        "test",
    )
    .unwrap();
    let reports: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
    let seen = reports.clone();
    let hooks = Hooks::new(&settings, dir.path())
        .unwrap()
        .with_reporter(Arc::new(move |r: &HookReport<'_>| {
            seen.lock()
                .unwrap()
                .push((r.agent.to_string(), r.event.to_string(), r.summary()))
        }));
    let runs = runtime().block_on(hooks.fire(
        "lead",
        HookEvent::PreToolUse,
        "bash",
        || json!({"tool_name": "Bash"}),
    ));
    let outputs: Vec<&str> = runs.iter().map(|r| r.stdout.trim()).collect();
    assert_eq!(outputs, ["saw-b", "saw-a"]);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports.iter().all(|(agent, event, summary)| agent == "lead"
        && event == "PreToolUse"
        && summary == "exit 0"));
}

#[test]
fn an_event_without_matching_hooks_runs_nothing_and_builds_no_input() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::parse(
        r#"{"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "touch ran"}]}]}}"#,
        "test",
    )
    .unwrap();
    let hooks = Hooks::new(&settings, dir.path()).unwrap();
    let runs = runtime().block_on(hooks.fire(
        "lead",
        HookEvent::PreToolUse,
        "bash",
        || -> Value { panic!("input built for no hook") },
    ));
    assert!(runs.is_empty());
    assert!(!dir.path().join("ran").exists());
}
