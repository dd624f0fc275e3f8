//! ask_user_question's and exit_plan_mode's menus in a real pseudo-terminal: an option taken
//! with the arrows, "Other" with words of one's own, and a plan sent back with feedback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use pty_support::Pty;
use repl_support::{leave, repl_in_pty, LIMIT};
use serde_json::json;
use troupe_testkit::{Step, TempWorkspace};

/// Waits until a menu shows with `row` highlighted.
fn wait_menu(pty: &Pty, row: &str) -> String {
    pty.wait_for(&format!("the menu at {row:?}"), LIMIT, |s| {
        s.lines().any(|l| l.trim_end() == row) && s.trim_end().ends_with("(esc)")
    })
}

#[test]
fn questions_and_a_plan_are_answered_from_menus() {
    let ws = TempWorkspace::new();
    let questions = json!({"questions": [
        {"question": "Which colour?", "header": "Colour", "multiSelect": false, "options": [
            {"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]},
        {"question": "Which name?", "header": "Name", "multiSelect": false, "options": [
            {"label": "foo", "description": ""}, {"label": "bar", "description": ""}]}
    ]});
    let server = common::lead_server([
        Step::tool("ask_user_question", questions),
        Step::tool("enter_plan_mode", json!({})),
        Step::tool("exit_plan_mode", json!({"plan": "1. Paint it"})),
        Step::text("will keep planning"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("ask me\r");
    let screen = wait_menu(&pty, "❯ 1. Red — warm");
    assert!(screen.contains("[Colour] Which colour?"), "{screen}");
    assert!(screen.contains("  3. Other (esc)"), "{screen}");
    pty.send("\u{1b}[B");
    wait_menu(&pty, "❯ 2. Blue — cool");
    pty.send("\r");
    wait_menu(&pty, "❯ 1. foo");
    pty.send("3");
    pty.send("baz\r");
    let screen = wait_menu(&pty, "❯ 1. Yes, and auto-accept edits");
    assert!(screen.contains("1. Paint it"), "{screen}");
    pty.send("3");
    pty.send("smaller\r");
    pty.wait_for_text("will keep planning", LIMIT);
    let requests = server.requests_for("lead");
    let (text, is_error) = requests[1].last_tool_result().unwrap();
    assert!(!is_error, "{text}");
    assert!(
        text.contains(r#""Which colour?"="Blue", "Which name?"="baz""#),
        "{text}"
    );
    let (text, is_error) = requests[3].last_tool_result().unwrap();
    assert!(
        is_error && text.contains("Their feedback: smaller"),
        "{text}"
    );
    leave(pty);
}
