//! `/rewind` at a real terminal: Esc Esc on an empty prompt line opens it, the prompts and
//! what to restore are menus, and the rewound prompt comes back on the input line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use repl_support::{leave, prompt_row, repl_in_pty, LIMIT};
use serde_json::json;
use std::time::Duration;
use troupe_testkit::{Step, TempWorkspace};

#[test]
fn esc_esc_on_an_empty_line_rewinds_and_puts_the_prompt_back() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("write_file", json!({"path": "made.txt", "content": "x\n"})),
        Step::text("made it"),
    ]);
    let args = ["--permission-mode", "bypassPermissions"];
    let mut pty = repl_in_pty(ws.path(), &server, &args, &[]);
    pty.send("make a file\r");
    pty.wait_for("the answer and the next prompt", LIMIT, |s| {
        s.contains("made it") && prompt_row(s).as_deref() == Some(">")
    });
    assert!(ws.exists("made.txt"));
    // Two separate presses (a pause tells a lone Esc from a key sequence).
    pty.send("\u{1b}");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("\u{1b}");
    pty.wait_for("the prompts' menu", LIMIT, |s| {
        s.contains("Rewind to before which prompt?")
            && s.contains("❯ 1. make a file")
            && s.contains("1 file changed since")
            && s.contains("2. Cancel (esc)")
    });
    pty.send("\r");
    pty.wait_for("what to restore", LIMIT, |s| {
        s.contains("Restore what?") && s.contains("3. Restore code")
    });
    pty.send("1");
    pty.wait_for("the prompt back on the line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> make a file")
    });
    assert!(!ws.exists("made.txt"));
    pty.send("\u{15}");
    pty.wait_for("an empty prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    leave(pty);
}
