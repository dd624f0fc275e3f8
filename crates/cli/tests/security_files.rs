//! Protected files through the real binary: the `.git/config` route from `acceptEdits` to
//! running any command (`core.fsmonitor`, then a read-only `git status`) is closed, while
//! ordinary edits still run without asking.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, result_json, stderr};
use serde_json::json;
use std::sync::{Arc, Mutex};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

const FSMONITOR: &str = "[core]\n\tfsmonitor = \"touch PWNED\"\n";

/// Every tool result the scripted model saw, in order.
type Results = Arc<Mutex<Vec<(String, bool)>>>;

/// A step that records the last tool result and then asks for the next tool call (or ends).
fn then(results: &Results, next: Option<(&'static str, serde_json::Value)>) -> Step {
    let results = Arc::clone(results);
    Step::dynamic(move |req| {
        let result = req.last_tool_result().expect("a tool result comes back");
        results.lock().unwrap().push(result);
        match &next {
            Some((tool, input)) => Reply::tool(*tool, input.clone()),
            None => Reply::text("done"),
        }
    })
}

/// Scripts the attack: write `.git/config` with an fsmonitor command, then `git status`.
fn script_git_config_route(server: &FakeServer) -> Results {
    script_fsmonitor_write(
        server,
        ".git/config",
        Some(("bash", json!({"command": "git status"}))),
    )
}

/// Scripts a write of the fsmonitor config to `path`, then the `next` tool call (if any).
fn script_fsmonitor_write(
    server: &FakeServer,
    path: &str,
    next: Option<(&'static str, serde_json::Value)>,
) -> Results {
    let results: Results = Arc::default();
    let mut steps = vec![Step::tool(
        "write_file",
        json!({"path": path, "content": FSMONITOR}),
    )];
    if next.is_some() {
        steps.push(then(&results, next));
    }
    steps.push(then(&results, None));
    server.script("lead", steps);
    results
}

fn git_repo() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README.md", "hello\n");
    ws.git_commit_all("first");
    ws
}

#[test]
fn accept_edits_cannot_write_git_config_so_git_status_runs_nothing() {
    let ws = git_repo();
    let config_before = ws.read(".git/config");
    let server = FakeServer::start();
    let results = script_git_config_route(&server);
    let out = headless_in_mode(ws.path(), &server, "configure git", "acceptEdits", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "done");

    let results = results.lock().unwrap();
    let (write, write_failed) = &results[0];
    assert!(*write_failed, "the write should be refused: {write}");
    assert!(write.contains("protected file"), "{write}");
    common::assert_contains(write, "--allowedTools \"Edit(.git/config)\"");
    assert!(write.contains("bypassPermissions"), "{write}");
    // git status really ran, and found the untouched config.
    let (status, status_failed) = &results[1];
    assert!(!status_failed, "git status: {status}");
    assert!(status.contains("On branch main"), "{status}");

    assert_eq!(ws.read(".git/config"), config_before);
    assert!(!ws.exists("PWNED"), "the fsmonitor command ran");
}

#[test]
fn a_symlinked_directory_does_not_hide_git_config() {
    let ws = git_repo();
    let config_before = ws.read(".git/config");
    std::os::unix::fs::symlink(".git", ws.join("cfg")).unwrap();
    let server = FakeServer::start();
    let results = script_fsmonitor_write(&server, "cfg/config", None);
    let out = headless_in_mode(
        ws.path(),
        &server,
        "configure git",
        "acceptEdits",
        &["--allowedTools", "Edit(**)"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = results.lock().unwrap();
    let (write, write_failed) = &results[0];
    assert!(*write_failed && write.contains("`.git/config`"), "{write}");
    assert_eq!(ws.read(".git/config"), config_before);
}

#[test]
fn ordinary_edits_still_run_in_accept_edits() {
    let ws = git_repo();
    let server = FakeServer::start();
    let results: Results = Arc::default();
    server.script(
        "lead",
        [
            Step::tool(
                "write_file",
                json!({"path": "src/new/lib.rs", "content": "pub fn f() {}\n"}),
            ),
            then(
                &results,
                Some((
                    "edit_file",
                    json!({"path": "README.md", "old_string": "hello", "new_string": "bye"}),
                )),
            ),
            then(&results, None),
        ],
    );
    let out = headless_in_mode(ws.path(), &server, "edit", "acceptEdits", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    for (text, failed) in results.lock().unwrap().iter() {
        assert!(!failed, "{text}");
    }
    assert_eq!(ws.read("src/new/lib.rs"), "pub fn f() {}\n");
    assert_eq!(ws.read("README.md"), "bye\n");
}

/// The control: where protected files are allowed (bypassPermissions, documented as giving this
/// up), the same two calls do run the command — so the test above guards a real route.
#[test]
fn the_route_is_real_where_bypass_allows_protected_files() {
    let ws = git_repo();
    let server = FakeServer::start();
    let results = script_git_config_route(&server);
    let out = headless_in_mode(
        ws.path(),
        &server,
        "configure git",
        "bypassPermissions",
        &[],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = results.lock().unwrap();
    assert!(!results[0].1, "the write: {}", results[0].0);
    assert_eq!(ws.read(".git/config"), FSMONITOR);
    assert!(ws.exists("PWNED"), "git did not run the fsmonitor command");
}
