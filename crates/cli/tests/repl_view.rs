//! What the REPL shows in a real pseudo-terminal: a spinner while the model thinks, a running
//! command's last output lines collapsing to a summary, permission questions in one line with
//! the diff and a scoped "always", colour only where it belongs. Every wait is on the emulated
//! screen (or the files the run leaves), bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use common::repl;
use repl_support::{leave, repl_in_pty, LIMIT};
use serde_json::json;
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// Whether `bytes` hold an SGR sequence (`ESC [ … m`): colour or another text style.
fn has_sgr(bytes: &[u8]) -> bool {
    bytes.windows(2).enumerate().any(|(i, w)| {
        w == b"\x1b[" && {
            let rest = &bytes[i + 2..];
            let n = rest
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b';')
                .count();
            rest.get(n) == Some(&b'm')
        }
    })
}

/// Types `keys` once the menu of a question shows.
fn answer(pty: &mut pty_support::Pty, keys: &str) {
    pty.wait_for("the menu", LIMIT, |s| {
        s.lines().any(|l| l.trim_end() == "❯ 1. Yes")
    });
    pty.send(keys);
}

#[test]
fn a_spinner_with_time_and_tokens_shows_while_the_model_thinks() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::delay(
        Duration::from_secs(3),
        Step::text("done thinking"),
    )]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("think hard\r");
    let screen = pty.wait_for_text("Working…", LIMIT);
    assert!(screen.contains("tokens · Ctrl-C to interrupt"), "{screen}");
    pty.wait_for("the answer, the spinner gone", LIMIT, |s| {
        s.contains("done thinking") && !s.contains("Working…")
    });
    leave(pty);
}

#[test]
fn a_running_command_shows_its_last_lines_then_one_summary_line() {
    let ws = TempWorkspace::new();
    let gate = ws.path().join("gate");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &gate,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "bash",
                json!({"command": "echo first-line; echo second-line; cat gate; echo last-line"}),
            ),
            Step::text("the command ran"),
        ],
    );
    let mut pty = repl_in_pty(
        ws.path(),
        &server,
        &["--permission-mode", "bypassPermissions"],
        &[],
    );
    pty.send("run it\r");
    let screen = pty.wait_for("the running command with its output", LIMIT, |s| {
        s.contains("⏺ bash(echo first-line") && s.contains("│ second-line")
    });
    assert!(screen.contains("│ first-line"), "{screen}");
    // Let the command go on: it reads the FIFO.
    std::fs::write(&gate, "from the gate\n").unwrap();
    pty.wait_for_text("the command ran", LIMIT);
    pty.wait_for("one summary line under the call, the live lines gone", LIMIT, |s| {
        s.contains("⏺ bash(echo first-line; echo second-line; cat gate; echo last-line)\n  ⎿ first-line (+")
            && !s.contains("│ second-line")
    });
    leave(pty);
}

#[test]
fn permission_questions_show_the_diff_and_always_is_scoped() {
    let ws = TempWorkspace::new();
    ws.write("notes.txt", "old line\nkept\n");
    let server = common::lead_server([
        Step::tool(
            "write_file",
            json!({"path": "notes.txt", "content": "new line\nkept\n"}),
        ),
        Step::tool("bash", json!({"command": "touch a.txt"})),
        Step::tool("bash", json!({"command": "touch b.txt"})),
        Step::tool("bash", json!({"command": "mkdir newdir"})),
        Step::tool("bash", json!({"command": "rm a.txt"})),
        Step::text("all asked"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("work\r");
    let screen = pty.wait_for_text("Allow write_file", LIMIT);
    assert!(
        screen.contains("  1 - old line") && screen.contains(" 1 + new line"),
        "{screen}"
    );
    let screen = pty.wait_for_text("(esc)", LIMIT);
    common::assert_contains(&screen, "Allow write_file \"notes.txt\"?\n");
    common::assert_contains(
        &screen,
        "❯ 1. Yes\n  2. Yes, and don't ask again this session for \"notes.txt\"\n  3. No, and tell the agent what to do differently (esc)",
    );
    // Enter takes the highlighted choice: Yes.
    answer(&mut pty, "\r");
    pty.wait_for_text("❯ 1. Yes\n", LIMIT);
    pty.wait_for_text("Allow bash \"touch a.txt\"", LIMIT);
    let screen = pty.wait_for_text("(esc)", LIMIT);
    common::assert_contains(
        &screen,
        "2. Yes, and don't ask again this session for \"touch:*\"",
    );
    // Down, then Enter: "always".
    answer(&mut pty, "\u{1b}[B");
    pty.wait_for_text("❯ 2. Yes, and don't ask again", LIMIT);
    pty.send("\r");
    // touch b.txt is covered; mkdir is a different command and is asked about.
    pty.wait_for_text("Allow bash \"mkdir newdir\"", LIMIT);
    assert!(
        ws.path().join("b.txt").exists(),
        "the second touch ran unasked"
    );
    answer(&mut pty, "r\r");
    pty.wait_for_text("Allow bash \"rm a.txt\"", LIMIT);
    // Esc means no.
    answer(&mut pty, "\u{1b}");
    pty.wait_for_text("all asked", LIMIT);
    assert_eq!(ws.read("notes.txt"), "new line\nkept\n");
    assert!(ws.path().join("newdir").is_dir());
    assert!(ws.path().join("a.txt").exists(), "Esc refused the rm");
    let local = ws.read(".troupe/settings.local.json");
    let settings: serde_json::Value = serde_json::from_str(&local).unwrap();
    assert_eq!(settings["permissions"]["allow"], json!(["Bash(mkdir:*)"]));
    let refusal = server.requests_for("lead")[5].last_tool_result().unwrap();
    assert!(refusal.1 && refusal.0.contains("refused"), "{refusal:?}");
    leave(pty);
    // The history holds the prompt, not the answers (`y`, `a`, `r`).
    let history = ws.read(".troupe/history");
    let entries: Vec<&str> = history
        .lines()
        .filter(|l| !l.is_empty() && *l != "#V2")
        .collect();
    assert_eq!(entries, ["work"], "{history}");
}

#[test]
fn markdown_is_coloured_on_a_terminal_and_plain_with_no_color_or_a_pipe() {
    let answer = "# Plan\n- run `cargo test` **now**\n```rust\nfn main() {}\n```\n";
    for no_color in [false, true] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        server.script("lead", [Step::text(answer)]);
        let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
        let mut pty = repl_in_pty(ws.path(), &server, &[], env);
        pty.send("plan\r");
        let screen = pty.wait_for_text("fn main()", LIMIT);
        match no_color {
            false => {
                assert!(screen.contains("• run cargo test now"), "{screen}");
                assert!(has_sgr(&pty.raw()), "colour on a terminal");
            }
            true => {
                assert!(screen.contains("- run `cargo test` **now**"), "{screen}");
                assert!(!has_sgr(&pty.raw()), "NO_COLOR: no styles at all");
            }
        }
        leave(pty);
    }
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text(answer)]);
    let out = repl(ws.path(), &server, &[], "plan\n/exit\n");
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        !out.stdout.contains(&0x1b),
        "piped: no escape sequences at all"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("- run `cargo test` **now**"));
}
