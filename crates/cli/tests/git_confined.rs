//! troupe's own git and the git commands it lets run as read-only run none of the programs a
//! repository's config names: a repository that plants a hook of each kind, an fsmonitor, an
//! external diff, a pager, and a filter and textconv driver (each leaving a marker file outside
//! the workspace and a line on stderr) is worked on in plan mode — worktrees created and removed
//! — and read with `git status`, `git diff`, `git log` and `git show` through bash in default
//! mode, unasked; no marker appears, and plain git shows the traps are real.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_go, headless_in_mode, result_json, script_bash_calls, stderr, subcommand};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// The hooks planted, each of which git runs at some point of the work below.
const HOOKS: &[&str] = &[
    "post-checkout",
    "pre-commit",
    "post-commit",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
];

/// A committed repository whose config and hooks run a program of every kind; each writes
/// `marks/<kind>` and says `PWNED-<kind>` on stderr.
fn trapped_repo(ws: &TempWorkspace, marks: &Path) {
    ws.git_init();
    ws.write("notes.txt", "one\n");
    ws.write(".gitattributes", "*.txt filter=trap diff=trap\n");
    ws.git_commit_all("first");
    let program = |kind: &str| format!("touch '{}/{kind}'; echo PWNED-{kind} >&2", marks.display());
    for hook in HOOKS {
        let path = ws.write(
            format!(".git/hooks/{hook}"),
            format!("#!/bin/sh\n{}\n", program(hook)),
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = [
        ("core.fsmonitor", format!("{}; false", program("fsmonitor"))),
        (
            "diff.external",
            format!("{}; true", program("diff-external")),
        ),
        ("core.pager", format!("{}; cat", program("pager"))),
        ("filter.trap.smudge", format!("{}; cat", program("smudge"))),
        ("filter.trap.clean", format!("{}; cat", program("clean"))),
        ("filter.trap.required", "true".to_string()),
        (
            "diff.trap.textconv",
            format!("{}; cat", program("textconv")),
        ),
    ];
    for (key, value) in config {
        ws.git(&["config", key, &value]);
    }
}

/// The markers the planted programs left.
fn sprung(marks: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

/// Plain git in `dir`, its stdout and stderr together.
fn plain_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Plain git springs the traps, so their absence above means something.
fn assert_traps_are_real(ws: &TempWorkspace, marks: &Path) {
    let elsewhere = tempfile::tempdir().unwrap();
    let control = elsewhere.path().join("control");
    plain_git(
        ws.path(),
        &["worktree", "add", "-q", control.to_str().unwrap()],
    );
    std::fs::write(control.join("notes.txt"), "changed\n").unwrap();
    let said = plain_git(&control, &["diff"]);
    plain_git(&control, &["status", "--short"]);
    let found = sprung(marks);
    for kind in ["post-checkout", "smudge", "fsmonitor", "diff-external"] {
        assert!(
            found.contains(&kind.to_string()),
            "plain git did not run {kind}: {found:?} {said}"
        );
    }
}

#[test]
fn plan_mode_creates_and_removes_worktrees_without_running_the_repositorys_programs() {
    let ws = TempWorkspace::new();
    let marks = tempfile::tempdir().unwrap();
    trapped_repo(&ws, marks.path());
    let server = common::lead_server([
        Step::tool("create_worktree", json!({"name": "look"})),
        Step::tool("list_worktrees", json!({})),
        Step::tool("remove_worktree", json!({"name": "look"})),
        Step::text("done"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "go", "plan", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lead = server.requests_for("lead");
    for (i, req) in lead[1..4].iter().enumerate() {
        let (text, is_error) = req.last_tool_result().unwrap();
        assert!(!is_error, "call {i} failed: {text}");
        assert!(!text.contains("PWNED"), "call {i}: {text}");
    }
    assert!(!ws.exists(".troupe/worktrees/look"), "removed");

    // From another terminal: a worktree with a changed file, whose removal runs `git status`
    // (clean filter, fsmonitor) and is refused, then discarded.
    let made = subcommand(ws.path(), &["worktree", "create", "edit"]);
    assert!(made.status.success(), "{}", stderr(&made));
    ws.write(".troupe/worktrees/edit/notes.txt", "changed\n");
    let refused = subcommand(ws.path(), &["worktree", "remove", "edit"]);
    assert!(!refused.status.success());
    common::assert_stderr_has(&refused, "notes.txt");
    let discarded = subcommand(ws.path(), &["worktree", "remove", "edit", "--discard"]);
    assert!(discarded.status.success(), "{}", stderr(&discarded));

    assert_eq!(sprung(marks.path()), Vec::<String>::new());
    assert_traps_are_real(&ws, marks.path());
}

/// Whether the read-only sandbox can run here; without it a read-only command is refused
/// headless. Skipped locally, a failure on CI.
fn landlock() -> bool {
    let out = subcommand(Path::new("/"), &["sandbox", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let available = report["landlock"]["available"] == true;
    troupe_testkit::requirement(&format!("a usable Landlock ({report})"), available)
}

#[test]
fn read_only_git_commands_run_unasked_without_the_repositorys_programs() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    let marks = tempfile::tempdir().unwrap();
    trapped_repo(&ws, marks.path());
    ws.write("notes.txt", "two\n");
    let server = FakeServer::start();
    let commands = [
        "git status --short",
        "git diff",
        "git log -p -2",
        "git show HEAD",
    ];
    script_bash_calls(&server, &commands);
    // Default mode: read-only commands run without asking, or a headless run would refuse them.
    let out = headless_go::<&str, &str>(ws.path(), &server, &[], &[]);
    assert_eq!(result_json(&out)["result"], "done");
    let results: Vec<(String, bool)> = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    for ((text, is_error), command) in results.iter().zip(commands) {
        assert!(!is_error, "{command}: {text}");
        assert!(!text.contains("PWNED"), "{command} ran a program: {text}");
    }
    assert!(results[0].0.contains("notes.txt"), "{}", results[0].0);
    assert!(
        results[1].0.contains("external diff program"),
        "git diff says what it did not run: {}",
        results[1].0
    );
    assert!(results[2].0.contains("first"), "{}", results[2].0);
    assert_eq!(sprung(marks.path()), Vec::<String>::new());

    // The programs' words reach the tool result when they run: unconfined (`"sandbox": "off"`,
    // no read-only level, so no overrides), the same call shows them.
    ws.write(".troupe/settings.json", r#"{"sandbox": "off"}"#);
    let server = FakeServer::start();
    script_bash_calls(&server, &["git diff"]);
    headless_go::<&str, &str>(ws.path(), &server, &[], &[]);
    let (diff, _) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(diff.contains("PWNED-diff-external"), "{diff}");
    assert_traps_are_real(&ws, marks.path());
}

#[test]
fn read_only_git_diff_in_an_ordinary_repository_shows_the_change() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("notes.txt", "one\n");
    ws.git_commit_all("first");
    ws.write("notes.txt", "two\n");
    let server = FakeServer::start();
    script_bash_calls(&server, &["git diff", "git log --oneline"]);
    headless_go::<&str, &str>(ws.path(), &server, &[], &[]);
    let lead = server.requests_for("lead");
    let (diff, is_error) = lead[1].last_tool_result().unwrap();
    assert!(
        !is_error && diff.contains("-one") && diff.contains("+two"),
        "{diff}"
    );
    let (log, is_error) = lead[2].last_tool_result().unwrap();
    assert!(!is_error && log.contains("first"), "{log}");
}
