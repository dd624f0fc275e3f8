//! Vim keys at the REPL's prompt in a real pseudo-terminal: the settings' `editorMode`
//! turns them on, normal mode's motions and edits change the line, `/vim` turns them off.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use repl_support::{leave, prompt_row, repl_in_pty, LIMIT};
use std::time::Duration;
use troupe_testkit::{Step, TempWorkspace};

#[test]
fn vim_keys_edit_the_prompt_and_slash_vim_turns_them_off() {
    let ws = TempWorkspace::new();
    ws.write(".home/.claude/settings.json", r#"{"editorMode": "vim"}"#);
    let server = common::lead_server([Step::text("got it"), Step::text("again")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("hello big world");
    pty.wait_for("the typed text in insert mode", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> hello big world") && s.contains("-- INSERT --")
    });
    // Esc: normal mode (a pause tells a lone Esc from a key sequence); then motions and edits.
    pty.send("\u{1b}");
    pty.wait_for("normal mode", LIMIT, |s| s.contains("-- NORMAL --"));
    pty.send("bx0wdw$xIX");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("\u{1b}");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("A!");
    pty.wait_for("the edited line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> Xhello orl!")
    });
    pty.send("\r");
    pty.wait_for_text("got it", LIMIT);
    assert_eq!(repl_support::user_text(&server, 0), "Xhello orl!");
    pty.wait_for("the next prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    pty.send("/vim\r");
    pty.wait_for("the next prompt without a mode", LIMIT, |s| {
        s.contains("(vim keys off)")
            && prompt_row(s).as_deref() == Some(">")
            && !s.contains("-- INSERT --")
    });
    pty.send("abc");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("\u{1b}");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("x");
    pty.wait_for("keys typing again", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> abcx")
    });
    pty.send("\u{15}");
    leave(pty);
}
