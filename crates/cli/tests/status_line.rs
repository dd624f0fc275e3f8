//! The settings' `statusLine` drawn under the REPL's prompt, in a real pseudo-terminal: the
//! command gets Claude Code's JSON on stdin and its output shows under the prompt, refreshed
//! after a turn; one that hangs shows nothing and never holds the prompt up.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use repl_support::{leave, prompt_row, repl_in_pty, LIMIT};
use serde_json::{json, Value};
use std::process::Command;
use troupe_testkit::{Step, TempWorkspace};

/// A workspace whose project settings set `command` as the status line, trusted.
fn workspace(command: &str) -> TempWorkspace {
    let ws = TempWorkspace::new();
    let settings = json!({"statusLine": {"type": "command", "command": command, "padding": 1}});
    ws.write(".claude/settings.json", settings.to_string());
    let trusted = common::run(
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws.path())
            .env("HOME", ws.path().join(".home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("TROUPE_WORKSPACE_TRUST")
            .args(["trust", "--yes"]),
    );
    assert!(trusted.status.success(), "{}", common::stderr(&trusted));
    ws
}

/// The row under the prompt row.
fn under_prompt(screen: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .rposition(|l| l.starts_with("> ") || *l == ">")?;
    lines.get(at + 1).map(|l| l.trim_end().to_string())
}

#[test]
fn the_status_line_shows_under_the_prompt_with_the_session_on_its_stdin() {
    let ws = workspace("cat > sl-input.json; n=$(cat sl-count 2>/dev/null || echo 0); n=$((n+1)); echo $n > sl-count; echo \"SL run $n\"; echo second line");
    let server = common::lead_server([Step::text("answered")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.wait_for("the status line's two lines", LIMIT, |s| {
        under_prompt(s).is_some_and(|l| l.starts_with(" SL run ")) && s.contains(" second line")
    });
    let input: Value = serde_json::from_str(&ws.read("sl-input.json")).unwrap();
    assert_eq!(input["model"]["id"], "claude-sonnet-4-5", "{input}");
    assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(input["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(".jsonl"));
    let root = ws.path().canonicalize().unwrap();
    let project = std::path::PathBuf::from(input["workspace"]["project_dir"].as_str().unwrap());
    assert_eq!(project.canonicalize().unwrap(), root);
    assert!(input["cost"]["total_cost_usd"].is_number(), "{input}");
    assert!(input["version"].is_string() && input["cwd"].is_string());
    let before: u32 = ws.read("sl-count").trim().parse().unwrap();
    pty.send("hello\r");
    pty.wait_for("the answer and a newer status line", LIMIT, |s| {
        s.contains("answered")
            && prompt_row(s).as_deref() == Some(">")
            && under_prompt(s).is_some_and(|l| {
                l.strip_prefix(" SL run ")
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|n| n > before)
            })
    });
    leave(pty);
}

#[test]
fn a_status_line_that_hangs_shows_nothing_and_never_holds_the_prompt() {
    let ws = workspace("sleep 30; echo never");
    let server = common::lead_server([Step::text("still answered")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("hello\r");
    let screen = pty.wait_for("the answer and the next prompt", LIMIT, |s| {
        s.contains("still answered") && prompt_row(s).as_deref() == Some(">")
    });
    assert!(!screen.contains("never"), "{screen}");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(!pty.contents().contains("never"));
    leave(pty);
}

#[test]
fn a_folder_answered_no_runs_no_status_line() {
    let ws = TempWorkspace::new();
    let settings = json!({"statusLine": {"type": "command", "command": "touch sl-ran; echo SL"}});
    ws.write(".claude/settings.json", settings.to_string());
    let server = common::lead_server([]);
    let mut cmd = common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic);
    cmd.env("TERM", "xterm-256color").env_remove("NO_COLOR");
    let mut pty = pty_support::Pty::spawn(cmd, 30, 100);
    let screen = pty.wait_for_text("[y/N]", LIMIT);
    assert!(
        screen.contains("statusLine: touch sl-ran; echo SL"),
        "{screen}"
    );
    pty.send("n\r");
    pty.wait_for("the prompt", LIMIT, |s| {
        s.contains("/help for commands") && prompt_row(s).is_some()
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        !ws.exists("sl-ran"),
        "the status line ran in a folder answered no"
    );
    leave(pty);
}
