//! The session's own tools through the real binary: bash's working directory persisting
//! between calls, ask_user_question, enter_plan_mode and exit_plan_mode, and leaving a worktree.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, stderr};
use serde_json::json;
use troupe_testkit::{Step, TempWorkspace};

fn last_result(server: &troupe_testkit::FakeServer, request: usize) -> (String, bool) {
    server.requests_for("lead")[request]
        .last_tool_result()
        .unwrap()
}

#[test]
fn a_cd_holds_for_the_next_bash_call_and_one_outside_resets_it() {
    let ws = TempWorkspace::new();
    std::fs::create_dir_all(ws.path().join("sub")).unwrap();
    let root = ws.path().canonicalize().unwrap();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "cd sub && echo in"})),
        Step::tool("bash", json!({"command": "pwd"})),
        Step::tool("bash", json!({"command": "cd /tmp"})),
        Step::tool("bash", json!({"command": "pwd"})),
        Step::text("done"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = last_result(&server, 2);
    assert!(
        text.starts_with(&format!("{}\n", root.join("sub").display())),
        "{text}"
    );
    let (text, _) = last_result(&server, 3);
    assert!(
        text.contains(&format!("Shell cwd was reset to {}", root.display())),
        "{text}"
    );
    let (text, _) = last_result(&server, 4);
    assert!(text.starts_with(&format!("{}\n", root.display())), "{text}");
}
