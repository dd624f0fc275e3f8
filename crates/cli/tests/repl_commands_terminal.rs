//! The first hour's REPL commands in a pseudo-terminal, as a person types them: `/status`
//! (its mode follows Shift-Tab at once), `/init` going to the model, `/doctor`, `/config`, and
//! `/msg` naming what is wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use repl_support::{leave, repl_in_pty, LIMIT};
use troupe_testkit::{Step, TempWorkspace};

#[test]
fn status_init_doctor_config_and_msg_at_the_terminal() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("CLAUDE.md written")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("/status\r");
    pty.wait_for_text("permission mode default", LIMIT);
    // Shift-Tab: /status says the mode chosen, before any turn.
    pty.send("\u{1b}[Z");
    pty.wait_for_text("⏵⏵ accept edits on", LIMIT);
    pty.send("/status\r");
    pty.wait_for_text("permission mode acceptEdits", LIMIT);
    pty.send("/init\r");
    pty.wait_for_text("CLAUDE.md written", LIMIT);
    let asked = server.requests_for("lead")[0].all_text();
    assert!(asked.contains("CLAUDE.md"), "{asked}");
    pty.send("/doctor\r");
    pty.wait_for_text("sandbox", LIMIT);
    pty.send("/msg nobody hi\r");
    pty.wait_for_text("nobody", LIMIT);
    pty.send("/msg\r");
    pty.wait_for_text("usage: /msg <teammate> <message>", LIMIT);
    leave(pty);
}
