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

fn two_questions() -> serde_json::Value {
    json!({"questions": [
        {"question": "Which colour?", "header": "Colour", "multiSelect": false, "options": [
            {"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]},
        {"question": "Which sizes?", "header": "Size", "multiSelect": true, "options": [
            {"label": "S", "description": ""}, {"label": "M", "description": ""},
            {"label": "L", "description": ""}]}
    ]})
}

#[test]
fn headless_ask_user_question_says_nobody_can_answer() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("ask_user_question", two_questions()),
        Step::text("decided myself"),
    ]);
    let out = common::headless_in_mode(ws.path(), &server, "go", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = last_result(&server, 1);
    assert!(is_error && text.contains("non-interactive"), "{text}");
    let denials = common::result_json(&out)["permission_denials"].clone();
    assert_eq!(denials[0]["tool_name"], "AskUserQuestion", "{denials}");
}

#[test]
fn the_repl_asks_each_question_and_the_answers_go_back() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("ask_user_question", two_questions()),
        Step::text("thanks"),
    ]);
    let out = common::repl(ws.path(), &server, &[], "choose\n2\n1, 3\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[Colour] Which colour?"), "{stdout}");
    assert!(stdout.contains("2. Blue — cool"), "{stdout}");
    let (text, is_error) = last_result(&server, 1);
    assert!(!is_error, "{text}");
    assert!(
        text.contains(r#""Which colour?"="Blue", "Which sizes?"="S, L""#),
        "{text}"
    );
}

#[test]
fn an_answer_of_ones_own_words_is_the_answer() {
    let ws = TempWorkspace::new();
    let q = json!({"questions": [{"question": "Name?", "header": "Name", "options": [
        {"label": "foo", "description": ""}, {"label": "bar", "description": ""}]}]});
    let server = common::lead_server([Step::tool("ask_user_question", q), Step::text("ok")]);
    let out = common::repl(ws.path(), &server, &[], "name it\nbaz quux\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = last_result(&server, 1);
    assert!(text.contains(r#""Name?"="baz quux""#), "{text}");
}

/// A stream-json session with `--permission-prompt-tool stdio`: `answer` answers each
/// `can_use_tool` request; the requests come back with the last result.
fn sdk_session(
    ws: &std::path::Path,
    server: &troupe_testkit::FakeServer,
    mode: &str,
    answer: impl Fn(&serde_json::Value) -> serde_json::Value,
) -> Vec<serde_json::Value> {
    use std::io::{BufRead, Write};
    let mut child = common::troupe(ws, server, troupe_testkit::Wire::Anthropic)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .args(["--verbose", "--permission-prompt-tool", "stdio"])
        .args(["--permission-mode", mode])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "go"}});
    writeln!(stdin, "{prompt}").unwrap();
    let mut asked = Vec::new();
    for line in lines {
        let value: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if value["type"] == "control_request" && value["request"]["subtype"] == "can_use_tool" {
            let response = json!({"type": "control_response", "response": {
                "subtype": "success", "request_id": value["request_id"],
                "response": answer(&value["request"])}});
            writeln!(stdin, "{response}").unwrap();
            asked.push(value["request"].clone());
        }
        if value["type"] == "result" {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    asked
}

#[test]
fn the_sdk_answers_ask_user_question_through_can_use_tool() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("ask_user_question", two_questions()),
        Step::text("thanks"),
    ]);
    let asked = sdk_session(ws.path(), &server, "default", |request| {
        let mut input = request["input"].clone();
        input["answers"] = json!({"Which colour?": "Red", "Which sizes?": "M"});
        json!({"behavior": "allow", "updatedInput": input})
    });
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["tool_name"], "AskUserQuestion");
    assert_eq!(
        asked[0]["input"]["questions"][0]["question"],
        "Which colour?"
    );
    let (text, is_error) = last_result(&server, 1);
    assert!(!is_error, "{text}");
    assert!(
        text.contains(r#""Which colour?"="Red", "Which sizes?"="M""#),
        "{text}"
    );
}

fn plan_steps() -> Vec<Step> {
    vec![
        Step::tool("enter_plan_mode", json!({})),
        Step::tool("write_file", json!({"path": "early.txt", "content": "x"})),
        Step::tool(
            "exit_plan_mode",
            json!({"plan": "1. Write note.txt", "mode": "bypassPermissions"}),
        ),
        Step::tool(
            "write_file",
            json!({"path": "note.txt", "content": "planned"}),
        ),
        Step::text("done"),
    ]
}

#[test]
fn the_repl_approves_a_plan_and_the_edits_run_in_the_mode_chosen() {
    let ws = TempWorkspace::new();
    let server = common::lead_server(plan_steps());
    let out = common::repl(ws.path(), &server, &[], "plan it\n1\n/permissions\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (text, is_error) = last_result(&server, 1);
    assert!(!is_error && text.contains("Entered plan mode"), "{text}");
    let (text, is_error) = last_result(&server, 2);
    assert!(is_error && text.contains("plan mode"), "{text}");
    assert!(!ws.path().join("early.txt").exists());
    assert!(stdout.contains("1. Write note.txt"), "{stdout}");
    assert!(stdout.contains("Would you like to proceed?"), "{stdout}");
    let (text, is_error) = last_result(&server, 3);
    assert!(!is_error && text.contains("approved your plan"), "{text}");
    // The model's own "mode" is not the answer: the person chose acceptEdits.
    assert!(text.contains("acceptEdits"), "{text}");
    // acceptEdits: the edit ran unasked (nothing was left on stdin to answer with).
    assert_eq!(
        std::fs::read_to_string(ws.path().join("note.txt")).unwrap(),
        "planned"
    );
    assert!(
        stdout.contains("the agent switched to permission mode acceptEdits"),
        "{stdout}"
    );
    assert!(stdout.contains("permission mode: acceptEdits"), "{stdout}");
}

#[test]
fn the_repl_keeps_planning_with_the_persons_feedback() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("enter_plan_mode", json!({})),
        Step::tool("exit_plan_mode", json!({"plan": "1. Rewrite everything"})),
        Step::tool("write_file", json!({"path": "note.txt", "content": "x"})),
        Step::text("ok"),
    ]);
    let out = common::repl(
        ws.path(),
        &server,
        &[],
        "plan it\nn smaller steps please\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = last_result(&server, 2);
    assert!(is_error && text.contains("smaller steps please"), "{text}");
    let (text, is_error) = last_result(&server, 3);
    assert!(is_error && text.contains("plan mode"), "{text}");
    assert!(!ws.path().join("note.txt").exists());
}

#[test]
fn headless_refuses_to_leave_plan_mode_unless_it_bypasses_permissions() {
    let ws = TempWorkspace::new();
    let server = common::lead_server(plan_steps());
    let out = common::headless_in_mode(ws.path(), &server, "go", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = last_result(&server, 3);
    assert!(is_error && text.contains("non-interactive"), "{text}");
    let (text, is_error) = last_result(&server, 4);
    assert!(is_error && text.contains("plan mode"), "{text}");
    assert!(!ws.path().join("note.txt").exists());

    let ws = TempWorkspace::new();
    let server = common::lead_server(plan_steps());
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = last_result(&server, 3);
    assert!(!is_error && text.contains("bypassPermissions"), "{text}");
    assert!(ws.path().join("note.txt").exists());
}

#[test]
fn the_sdk_approves_a_plan_through_can_use_tool() {
    let ws = TempWorkspace::new();
    let server = common::lead_server(plan_steps());
    let asked = sdk_session(ws.path(), &server, "default", |request| {
        match request["tool_name"].as_str() {
            Some("ExitPlanMode") => json!({"behavior": "allow", "updatedPermissions": [
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}),
            _ => json!({"behavior": "deny", "message": "not this"}),
        }
    });
    let names: Vec<&str> = asked
        .iter()
        .filter_map(|a| a["tool_name"].as_str())
        .collect();
    assert_eq!(names, ["ExitPlanMode"], "{asked:?}");
    assert_eq!(asked[0]["input"]["plan"], "1. Write note.txt");
    let (text, is_error) = last_result(&server, 3);
    assert!(!is_error && text.contains("acceptEdits"), "{text}");
    assert!(ws.path().join("note.txt").exists());
}

#[test]
fn create_worktree_moves_the_session_in_and_exit_worktree_brings_it_back() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README.md", "main\n");
    ws.git_commit_all("first");
    let root = ws.path().canonicalize().unwrap();
    let tree = root.join(".troupe/worktrees/feat");
    let server = common::lead_server([
        Step::tool("exit_worktree", json!({})),
        Step::tool("create_worktree", json!({"name": "feat"})),
        Step::tool("bash", json!({"command": "pwd"})),
        Step::tool("write_file", json!({"path": "inside.txt", "content": "x"})),
        Step::tool("exit_worktree", json!({"action": "keep"})),
        Step::tool("bash", json!({"command": "pwd"})),
        Step::text("done"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = last_result(&server, 1);
    assert!(
        !is_error && text.contains("No worktree session is active"),
        "{text}"
    );
    let (text, _) = last_result(&server, 2);
    assert!(text.contains("Your session now works in it"), "{text}");
    let (text, _) = last_result(&server, 3);
    assert!(text.starts_with(&format!("{}\n", tree.display())), "{text}");
    assert!(tree.join("inside.txt").exists());
    assert!(!root.join("inside.txt").exists());
    let (text, is_error) = last_result(&server, 5);
    assert!(!is_error && text.contains("kept at"), "{text}");
    assert!(
        text.contains(&format!("back in {}", root.display())),
        "{text}"
    );
    let (text, _) = last_result(&server, 6);
    assert!(text.starts_with(&format!("{}\n", root.display())), "{text}");
    // A task's worktree is for its owner: creating one does not move the session.
    let server = common::lead_server([
        Step::tool("create_task", json!({"subject": "s"})),
        Step::tool("create_worktree", json!({"name": "t", "task_id": 1})),
        Step::tool("bash", json!({"command": "pwd"})),
        Step::text("done"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = last_result(&server, 3);
    assert!(text.starts_with(&format!("{}\n", root.display())), "{text}");
}

#[test]
fn the_repl_says_the_agent_entered_plan_mode_and_the_next_turn_stays_in_it() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("enter_plan_mode", json!({})),
        Step::text("planning"),
        Step::tool("write_file", json!({"path": "note.txt", "content": "x"})),
        Step::text("refused"),
    ]);
    let out = common::repl(
        ws.path(),
        &server,
        &[],
        "plan\n/permissions\nwrite it\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the agent switched to permission mode plan"),
        "{stdout}"
    );
    assert!(stdout.contains("permission mode: plan"), "{stdout}");
    let (text, is_error) = last_result(&server, 3);
    assert!(is_error && text.contains("plan mode"), "{text}");
    assert!(!ws.path().join("note.txt").exists());
}
