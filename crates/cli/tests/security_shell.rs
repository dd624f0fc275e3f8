//! The shell analysis through the real binary, as an attacker would try it: a `Bash(rm:*)` deny
//! rule holds against every spelling of `rm`, disguised writes are refused in `default` and
//! `plan` mode, and ordinary read-only work still runs without asking.
//!
//! Each test has a control that runs the same commands where they are allowed, so a refusal is
//! known to have prevented something real. (The plan-gated teammate uses the same classifier,
//! through `BashTool::effect`; that is covered by the tools crate's unit tests.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_go, script_bash_calls};
use troupe_testkit::{FakeServer, TempWorkspace};

/// Runs troupe headless in `ws` with `args` while the fake model asks for one bash call per
/// command; returns each call's result text and whether it was an error.
fn bash_calls(ws: &TempWorkspace, commands: &[&str], args: &[&str]) -> Vec<(String, bool)> {
    bash_calls_with_env(ws, commands, args, &[])
}

fn bash_calls_with_env(
    ws: &TempWorkspace,
    commands: &[&str],
    args: &[&str],
    env: &[(&str, String)],
) -> Vec<(String, bool)> {
    let server = FakeServer::start();
    script_bash_calls(&server, commands);
    headless_go(ws.path(), &server, args, env);
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), commands.len() + 1, "one request per call");
    requests[1..]
        .iter()
        .map(|request| request.last_tool_result().expect("a tool result"))
        .collect()
}

/// Spellings of `rm` that each try to delete `victim.txt`.
const RM_SPELLINGS: &[&str] = &[
    "\"rm\" victim.txt",
    "r''m victim.txt",
    "\\rm victim.txt",
    "/bin/rm victim.txt",
    "/usr/bin/env rm victim.txt",
    "env -i rm victim.txt",
    "${X:-rm} victim.txt",
    "a=rm; $a victim.txt",
    "stdbuf -o0 rm victim.txt",
    "trap 'rm victim.txt' EXIT",
    "f(){ rm victim.txt; }; f",
    "eval rm victim.txt",
    "command rm victim.txt",
    "nice -n 5 rm victim.txt",
    "timeout 5 rm victim.txt",
    "echo victim.txt | xargs rm",
    "sudo rm victim.txt",
    "bash -c 'rm victim.txt'",
    "$(echo rm) victim.txt",
    "`echo rm` victim.txt",
    "$'\\x72m' victim.txt",
    "find . -name victim.txt -exec rm {} +",
];

#[test]
fn a_deny_rule_holds_against_every_spelling_of_the_program() {
    let ws = TempWorkspace::new();
    ws.write("victim.txt", "precious");
    let results = bash_calls(
        &ws,
        RM_SPELLINGS,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--disallowedTools",
            "Bash(rm:*)",
        ],
    );
    for (command, (text, is_error)) in RM_SPELLINGS.iter().zip(&results) {
        assert!(is_error, "{command:?} ran: {text}");
        assert!(text.contains("Bash(rm:*)"), "{command:?}: {text}");
    }
    assert_eq!(ws.read("victim.txt"), "precious");
}

#[test]
fn control_without_the_deny_rule_each_spelling_really_deletes() {
    // Spellings that work without sudo or a terminal; each gets a fresh victim.
    let runnable: Vec<&str> = RM_SPELLINGS
        .iter()
        .copied()
        .filter(|c| !c.starts_with("sudo"))
        .collect();
    for command in runnable {
        let ws = TempWorkspace::new();
        ws.write("victim.txt", "precious");
        let results = bash_calls(&ws, &[command], &["--permission-mode", "bypassPermissions"]);
        assert!(
            !ws.exists("victim.txt"),
            "{command:?} did not delete: {results:?}"
        );
    }
}

/// Disguised writes, each of which creates or changes a marker file when it runs.
const DISGUISES: &[&str] = &[
    "ls # it's\ntouch marker-comment",
    "$'\\x74ouch' marker-ansi",
    "sort -uo marker-sort input.txt",
    "git -c core.fsmonitor='touch marker-fsmonitor; false' status",
    "git -c diff.external='touch marker-external; true' diff",
    "find . -maxdepth 0 -fprint marker-find",
    "echo x > marker-redirect",
    "cat input.txt | tee marker-tee",
    "sed -i s/line/changed/ input.txt",
    "cat <(touch marker-procsub)",
    "echo $(touch marker-subst)",
    "ls && touch marker-list",
];

const MARKERS: &[&str] = &[
    "marker-comment",
    "marker-ansi",
    "marker-sort",
    "marker-fsmonitor",
    "marker-external",
    "marker-find",
    "marker-redirect",
    "marker-tee",
    "marker-procsub",
    "marker-subst",
    "marker-list",
];

/// A git repository with a committed `input.txt` changed since, so `git diff` has work to do.
fn disguise_workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("input.txt", "line\n");
    ws.git_commit_all("initial");
    ws.write("input.txt", "line\nline two\n");
    ws
}

fn assert_disguises_refused(mode: &str) {
    let ws = disguise_workspace();
    let results = bash_calls(&ws, DISGUISES, &["--permission-mode", mode]);
    for (command, (text, is_error)) in DISGUISES.iter().zip(&results) {
        assert!(is_error, "{mode}: {command:?} ran: {text}");
    }
    for marker in MARKERS {
        assert!(!ws.exists(marker), "{mode}: {marker} was written");
    }
    assert_eq!(ws.read("input.txt"), "line\nline two\n");
}

#[test]
fn default_mode_headless_refuses_every_disguised_write() {
    assert_disguises_refused("default");
}

#[test]
fn plan_mode_refuses_every_disguised_write() {
    assert_disguises_refused("plan");
}

#[test]
fn control_when_allowed_every_disguise_really_writes() {
    let ws = disguise_workspace();
    bash_calls(&ws, DISGUISES, &["--permission-mode", "bypassPermissions"]);
    for marker in MARKERS {
        assert!(
            ws.exists(marker),
            "{marker} was not written: the disguise proves nothing"
        );
    }
    assert!(ws.read("input.txt").contains("changed"));
}

#[test]
fn ordinary_read_only_work_runs_without_asking_in_default_mode() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write(
        "Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    ws.write(
        "src/lib.rs",
        "pub fn hello() -> &'static str { \"needle\" }\n",
    );
    ws.write(
        "Cargo.lock",
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\n\
         version = 4\n\n[[package]]\nname = \"tiny\"\nversion = \"0.1.0\"\n",
    );
    ws.git_commit_all("initial");
    ws.write(
        "src/lib.rs",
        "pub fn hello() -> &'static str { \"needle two\" }\n",
    );
    let cargo_home = tempfile::tempdir().expect("a temporary CARGO_HOME");
    let mut env = vec![(
        "CARGO_HOME",
        cargo_home.path().to_string_lossy().into_owned(),
    )];
    // The tests give troupe its own HOME; rustup still needs to find its toolchains.
    if let Some(rustup) = rustup_home() {
        env.push(("RUSTUP_HOME", rustup));
    }
    let commands = [
        "ls -la",
        "cat Cargo.toml src/lib.rs",
        "grep -rn needle src",
        "git status --short",
        "git diff",
        "cargo metadata --format-version 1 --offline",
        "ls | wc -l && cd src && ls",
    ];
    let results = bash_calls_with_env(&ws, &commands, &[], &env);
    for (command, (text, is_error)) in commands.iter().zip(&results) {
        assert!(!is_error, "{command:?} was not run: {text}");
        assert!(text.contains("exit code: 0"), "{command:?}: {text}");
    }
    assert!(results[1].0.contains("name = \"tiny\""), "{}", results[1].0);
    assert!(results[2].0.contains("src/lib.rs:1"), "{}", results[2].0);
    assert!(results[3].0.contains("M src/lib.rs"), "{}", results[3].0);
    assert!(results[4]
        .0
        .contains("+pub fn hello() -> &'static str { \"needle two\" }"));
    assert!(results[5].0.contains("\"packages\""), "{}", results[5].0);
    assert!(
        results[5].0.contains("\"name\":\"tiny\""),
        "{}",
        results[5].0
    );
}

/// Where rustup keeps its toolchains for the user running the tests, if it is in use.
fn rustup_home() -> Option<String> {
    if let Ok(home) = std::env::var("RUSTUP_HOME") {
        return Some(home);
    }
    let home = std::env::var("HOME").ok()?;
    let path = std::path::Path::new(&home).join(".rustup");
    path.exists().then(|| path.to_string_lossy().into_owned())
}
