//! todo_write through the real binary: the list in the json result, the reminder after idle
//! rounds, and the list surviving `--continue`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, result_json, stderr};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

fn todos(open: &str) -> serde_json::Value {
    json!({"todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": open, "status": "in_progress", "activeForm": "Fixing the bug"}
    ]})
}

#[test]
fn the_list_is_reported_and_a_stale_one_is_recalled_after_idle_rounds() {
    let ws = TempWorkspace::new();
    std::fs::write(ws.path().join("a.txt"), "alpha").unwrap();
    let server = FakeServer::start();
    let mut steps = vec![Step::tool("todo_write", todos("Fix the bug"))];
    steps.extend((0..4).map(|_| Step::tool("read_file", json!({"path": "a.txt"}))));
    steps.push(Step::text("done"));
    server.script("lead", steps);
    // Default mode: todo_write needs no permission.
    let out = headless_in_mode(ws.path(), &server, "fix it", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["todos"][1]["content"], "Fix the bug", "{result}");
    assert_eq!(result["todos"][1]["status"], "in_progress");
    assert_eq!(result["todos"][1]["activeForm"], "Fixing the bug");
    let requests = server.requests_for("lead");
    let reminded: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.all_text().contains("Your todo list has not changed"))
        .map(|(i, _)| i)
        .collect();
    // Written before request 1; requests 1..=3 are quiet, request 4 carries the reminder.
    assert_eq!(reminded.first(), Some(&4), "{reminded:?}");
    assert!(requests[4].all_text().contains("◐ Fixing the bug"));
    assert!(requests[0].tool_names().contains(&"todo_write".to_string()));
}

#[test]
fn continue_restores_the_list() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("todo_write", todos("Ship it")),
        Step::text("later"),
        Step::text("still here"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "plan", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = headless_in_mode(ws.path(), &server, "go on", "default", &["--continue"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["todos"][1]["content"], "Ship it");
}

#[test]
fn a_bad_list_is_an_error_result_the_model_can_fix() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let two = json!({"todos": [
        {"content": "a", "status": "in_progress", "activeForm": "A"},
        {"content": "b", "status": "in_progress", "activeForm": "B"}
    ]});
    server.script("lead", [Step::tool("todo_write", two), Step::text("ok")]);
    let out = headless_in_mode(ws.path(), &server, "plan", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(is_error && text.contains("exactly one"), "{text}");
    assert!(result_json(&out).get("todos").is_none());
}
