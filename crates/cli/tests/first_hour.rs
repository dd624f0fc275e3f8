//! Small surprises of a first hour, through the binary: a plain `-p` run leaves no team
//! folder behind, and `.troupe/` made outside a repository is announced once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{Step, TempWorkspace, Wire};

fn team_folders(ws: &TempWorkspace) -> Vec<String> {
    std::fs::read_dir(ws.join(".troupe/teams"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_plain_print_run_leaves_no_team_folder_and_a_team_run_keeps_its_own() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("hello")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("TROUPE_TEAM")
        .args(["-p", "hi"]));
    assert!(out.status.success(), "{out:?}");
    assert!(team_folders(&ws).is_empty(), "{:?}", team_folders(&ws));
    // The session itself is kept: it can be resumed.
    assert!(ws.join(".troupe/sessions").is_dir());

    // A run that put a task on the board keeps its team.
    let server = common::lead_server([
        Step::tool("create_task", json!({"subject": "write the docs"})),
        Step::text("planned"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("TROUPE_TEAM")
        .args(["-p", "plan"]));
    assert!(out.status.success(), "{out:?}");
    let kept = team_folders(&ws);
    assert_eq!(kept, ["default"], "the workspace's team keeps its board");
    // `troupe task list` from another terminal sees that board, without --team.
    let listed = common::subcommand(ws.path(), &["task", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("write the docs"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

#[test]
fn troupe_dir_outside_a_repository_is_announced_once() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("one"), Step::text("two")]);
    let first = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(first.status.success());
    let err = stderr(&first);
    assert!(err.contains("is not in a git repository"), "{err}");
    assert!(
        err.contains(&ws.join(".troupe").display().to_string()),
        "{err}"
    );
    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "again"]));
    assert!(
        !stderr(&second).contains("is not in a git repository"),
        "said twice"
    );

    // Inside a repository nothing is said.
    let repo = TempWorkspace::new();
    std::fs::create_dir(repo.join(".git")).unwrap();
    let server = common::lead_server([Step::text("three")]);
    let out = run(troupe(repo.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(!stderr(&out).contains("is not in a git repository"));
}
