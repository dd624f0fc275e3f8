//! Teammates isolated in worktrees of their own (in-process, as processes, across
//! `--continue`) and subagents working where their parent is bound, through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod worktree_support;

use common::{run, stderr, subcommand, troupe};
use serde_json::json;
use troupe_store::NewTask;
use troupe_testkit::{FakeServer, Reply, Step, Wire};
use worktree_support::*;

fn isolated_teammate(mode: &str) {
    let ws = repo();
    let server = FakeServer::start();
    ack_fallback(&server);
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "bob", "role": "coder", "prompt": "Write bob.txt and commit it.",
                       "isolation": "worktree"}),
            ),
            Step::tool("remove_worktree", json!({"name": "bob"})),
            Step::text("bob works in his own worktree"),
        ],
    );
    server.script(
        "bob",
        [
            Step::tool(
                "write_file",
                json!({"path": "bob.txt", "content": "bob's work\n"}),
            ),
            Step::tool("bash", json!({"command": "git add bob.txt"})),
            Step::tool(
                "bash",
                json!({"command": "git commit -q -m 'bob: his file'"}),
            ),
            Step::text("bob: committed on wt/bob"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "go",
            "--output-format",
            "json",
            "--teammate-mode",
            mode,
        ])
        .args(COMMIT_RULES));
    assert!(
        out.status.success(),
        "{mode}: stderr: {}\nstdout: {}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );

    let bob = server.requests_for("bob");
    assert_eq!(bob.len(), 4, "{mode}: every scripted step ran");
    let system = bob[0].system();
    let dir = ws
        .path()
        .canonicalize()
        .unwrap()
        .join(".troupe/worktrees/bob");
    assert!(system.contains("# Your worktree"), "{mode}: {system}");
    assert!(
        system.contains(&dir.display().to_string()),
        "{mode}: the prompt names the worktree"
    );
    for (i, step) in bob[1..4].iter().enumerate() {
        let (text, is_error) = step.last_tool_result().unwrap();
        assert!(!is_error, "{mode}: step {i}: {text}");
    }
    // The lead cannot pull the worktree from under a live teammate.
    let (text, is_error) = server.requests_for("lead")[2].last_tool_result().unwrap();
    assert!(
        is_error && text.contains("teammate bob's own"),
        "{mode}: {text}"
    );

    assert_eq!(
        member(&troupe_testkit::block_on(roster(&ws)), "bob")["worktree"],
        "bob",
        "{mode}"
    );
    assert_eq!(ws.read(".troupe/worktrees/bob/bob.txt"), "bob's work\n");
    assert!(!ws.exists("bob.txt"), "{mode}: the main tree is untouched");
    assert_eq!(ws.git(&["show", "wt/bob:bob.txt"]), "bob's work\n");
    main_tree_clean(&ws);
    let status = ok(&subcommand(ws.path(), &["team", "status"]));
    let row = status.lines().find(|l| l.starts_with("bob ")).unwrap();
    assert_eq!(
        row.matches("bob").count(),
        2,
        "{mode}: name and worktree: {status}"
    );
}

#[test]
fn a_teammate_spawned_with_worktree_isolation_works_in_its_own() {
    isolated_teammate("in-process");
}

#[test]
fn worktree_isolation_holds_for_teammate_processes() {
    isolated_teammate("process");
}

#[test]
fn a_resumed_teammate_keeps_its_own_worktree() {
    let ws = repo();
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "bob", "role": "coder", "prompt": "Wait for instructions.",
                       "isolation": "worktree"}),
            ),
            Step::text("bob is waiting"),
        ],
    );
    server.script("bob", [Step::text("bob: ready")]);
    let first = common::headless_in_mode(ws.path(), &server, "go", "acceptEdits", &[]);
    assert!(first.status.success(), "stderr: {}", stderr(&first));

    // Mail waits for bob while no lead runs; --continue respawns him in his worktree.
    ok(&subcommand(
        ws.path(),
        &["team", "send", "bob", "write later.txt"],
    ));
    server.script(
        "bob",
        [
            Step::tool(
                "write_file",
                json!({"path": "later.txt", "content": "later\n"}),
            ),
            Step::text("bob: wrote later.txt"),
        ],
    );
    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "carry on",
        "--continue",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
    ]));
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    let bob = server.requests_for("bob");
    let (text, is_error) = bob.last().unwrap().last_tool_result().unwrap();
    assert!(!is_error, "{text}");
    assert!(bob.last().unwrap().system().contains("# Your worktree"));
    assert_eq!(ws.read(".troupe/worktrees/bob/later.txt"), "later\n");
    assert!(
        !ws.exists("later.txt"),
        "the resumed teammate wrote into the main tree"
    );
    main_tree_clean(&ws);
}

#[test]
fn a_subagent_works_where_its_parent_is_bound() {
    let ws = repo();
    let store = troupe_store::file::open(&ws.join(".troupe"), "default").unwrap();
    let task = troupe_testkit::block_on(store.create_task(&NewTask {
        subject: "the lead's own task".into(),
        created_by: "lead".into(),
        ..NewTask::default()
    }))
    .unwrap();
    ok(&wt(
        &ws,
        &["create", "mine", "--task", &task.id.to_string()],
    ));
    let server = FakeServer::start();
    let ws_path = ws.path().to_path_buf();
    let id = task.id;
    server.script(
        "lead",
        [
            Step::dynamic(move |_| {
                let store = troupe_store::file::open(&ws_path.join(".troupe"), "default").unwrap();
                troupe_testkit::block_on(store.claim_task(id, "lead", 1)).unwrap();
                Reply::tool("list_worktrees", json!({}))
            }),
            Step::tool(
                "task",
                json!({"description": "write a file", "prompt": "Write sub.txt."}),
            ),
            Step::text("delegated"),
        ],
    );
    server.script(
        "subagent",
        [
            Step::tool(
                "write_file",
                json!({"path": "sub.txt", "content": "by the subagent\n"}),
            ),
            Step::text("wrote sub.txt"),
        ],
    );
    let out = common::headless_in_mode(ws.path(), &server, "go", "acceptEdits", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let (text, is_error) = server.requests_for("lead")[2].last_tool_result().unwrap();
    assert!(!is_error && text.contains("wrote sub.txt"), "{text}");
    assert_eq!(
        ws.read(".troupe/worktrees/mine/sub.txt"),
        "by the subagent\n"
    );
    assert!(
        !ws.exists("sub.txt"),
        "the subagent escaped its parent's worktree"
    );
}
