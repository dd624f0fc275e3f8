//! Helpers shared by the worktree tests.
#![allow(dead_code)]

use super::common::{stderr, subcommand};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

/// Anything not scripted (the lead reading its teammates' reports) answers with a short text.
pub fn ack_fallback(server: &FakeServer) {
    server.set_fallback(|req| Step::reply(Reply::text(format!("ack from {}", req.agent))));
}

/// A repository on `main` with one commit, no remote and no upstream.
pub fn repo() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README.md", "the main tree\n");
    ws.git_commit_all("first");
    ws
}

/// `troupe worktree ARGS…` in `ws`.
pub fn wt(ws: &TempWorkspace, args: &[&str]) -> Output {
    let mut full = vec!["worktree"];
    full.extend_from_slice(args);
    subcommand(ws.path(), &full)
}

#[track_caller]
pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
pub fn refused(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected a refusal; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr(out)
}

/// Runs git in `dir`, returning stdout; panics when git fails.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn branches(ws: &TempWorkspace) -> String {
    ws.git(&["branch", "--list", "--format=%(refname:short)"])
}

pub fn events(ws: &TempWorkspace) -> Vec<Value> {
    ws.read(".troupe/teams/default/events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event is JSON"))
        .collect()
}

pub async fn roster(ws: &TempWorkspace) -> Value {
    super::common::team_roster(ws.path())
        .await
        .expect("the team has a roster")
}

pub fn member<'a>(roster: &'a Value, name: &str) -> &'a Value {
    roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not on roster: {roster}"))
}

/// The main tree shows nothing of troupe's state, and the user's `.gitignore` was not touched.
#[track_caller]
pub fn main_tree_clean(ws: &TempWorkspace) {
    assert_eq!(
        ws.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert!(
        !ws.exists(".gitignore"),
        "troupe must not write the user's .gitignore"
    );
    let exclude = ws.read(".git/info/exclude");
    assert_eq!(
        exclude.lines().filter(|l| *l == "/.troupe/").count(),
        1,
        "{exclude}"
    );
}

/// Permissions for a teammate that writes files and commits: edits accepted, `git add` and
/// `git commit` allowed by rule — so bash runs in the workspace-write sandbox, not unconfined.
pub const COMMIT_RULES: [&str; 6] = [
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    "Bash(git add:*)",
    "--allowedTools",
    "Bash(git commit:*)",
];
