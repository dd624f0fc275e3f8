//! `/rewind` with a team: the lead's files go back, a teammate's worktree is left as it is and
//! the rewind says whose changes it left.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod worktree_support;

use serde_json::json;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};
use troupe_testkit::{FakeServer, Step, Wire};

#[test]
fn rewinding_the_lead_leaves_a_teammates_worktree_and_says_so() {
    let ws = worktree_support::repo();
    let server = FakeServer::start();
    worktree_support::ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "write_file",
                json!({"path": "lead.txt", "content": "lead\n"}),
            ),
            Step::tool(
                "spawn_teammate",
                json!({"name": "bob", "role": "coder", "prompt": "Write bob.txt.",
                       "isolation": "worktree"}),
            ),
            Step::text("bob is on it"),
        ],
    );
    server.script(
        "bob",
        [
            Step::tool(
                "write_file",
                json!({"path": "bob.txt", "content": "bob's\n"}),
            ),
            Step::text("bob: written"),
        ],
    );
    let mut child = common::troupe(ws.path(), &server, Wire::Anthropic)
        .args(["--permission-mode", "bypassPermissions"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let bob_file = ws.path().join(".troupe/worktrees/bob/bob.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(bob_file.exists() && server.requests_for("bob").len() >= 2) {
        assert!(Instant::now() < deadline, "bob never wrote his file");
        std::thread::sleep(Duration::from_millis(20));
    }
    stdin.write_all(b"/rewind\n1\n3\n/exit\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("put back 1 file"), "{text}");
    assert!(
        text.contains("worktrees are theirs and stay as they are: bob"),
        "{text}"
    );
    assert!(!ws.exists("lead.txt"));
    assert!(bob_file.exists(), "the teammate's work is his");
}
