//! What troupe prints to a terminal never carries a raw control sequence from a model or a
//! file: roles, mail and model text show escapes (`\x1b`) instead of clipboard writes (OSC 52),
//! screen clears or carriage-return overwrites. JSON output stays exact JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{repl, result_json, run, stderr, subcommand, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// An OSC 52 write of "evil" to the clipboard.
const OSC52: &str = "\u{1b}]52;c;ZXZpbA==\u{7}";

/// Raw bytes a terminal would act on: ESC, BEL, CR, and the UTF-8 form of C1 CSI (U+009B).
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, 0x1b | 0x07 | b'\r') {
            found.push(format!("byte {i}: {b:#04x}"));
        }
        if *b == 0xc2 && bytes.get(i + 1) == Some(&0x9b) {
            found.push(format!("byte {i}: U+009B"));
        }
    }
    found
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let found = raw_controls(bytes);
    assert!(
        found.is_empty(),
        "{what} carries raw control characters {found:?}: {}",
        String::from_utf8_lossy(bytes)
    );
}

#[test]
fn team_subcommands_and_text_output_show_escapes_not_control_sequences() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let role = format!("{OSC52}coder");
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": role, "prompt": "report"}),
            ),
            Step::text("spawned"),
            Step::text(&format!("all done{OSC52}\u{1b}[2J\rforged line \u{9b}31m")),
        ],
    );
    server.script(
        "alice",
        [Step::reply(Reply::text(format!(
            "alice reports{OSC52}\u{1b}[31m"
        )))],
    );
    server.set_fallback(|_| Step::text("ok"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--permission-mode",
        "bypassPermissions",
        "--verbose",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_clean("-p text stdout", &out.stdout);
    assert_clean("-p --verbose stderr", &out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    common::assert_contains(
        &stdout,
        "all done\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\rforged line \\u{9b}31m",
    );

    let status = subcommand(ws.path(), &["team", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert_clean("team status", &status.stdout);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("\\x1b]52;c;ZXZpbA==\\x07coder"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );

    let log = subcommand(ws.path(), &["team", "log"]);
    assert!(log.status.success(), "{}", stderr(&log));
    assert_clean("team log", &log.stdout);
    assert!(String::from_utf8_lossy(&log.stdout).contains("\\x1b]52"));

    let sent = subcommand(
        ws.path(),
        &["team", "send", "alice", &format!("hello{OSC52}\u{8}\u{8}")],
    );
    assert!(sent.status.success(), "{}", stderr(&sent));
    let inbox = subcommand(ws.path(), &["team", "inbox", "alice"]);
    assert!(inbox.status.success(), "{}", stderr(&inbox));
    assert_clean("team inbox", &inbox.stdout);
    assert!(
        String::from_utf8_lossy(&inbox.stdout).contains("hello\\x1b]52;c;ZXZpbA==\\x07\\x08\\x08"),
        "{}",
        String::from_utf8_lossy(&inbox.stdout)
    );

    // JSON output is exact: the same characters, escaped the JSON way.
    let json_status = subcommand(ws.path(), &["team", "status", "--json"]);
    assert_clean("team status --json", &json_status.stdout);
    let roster: serde_json::Value = serde_json::from_slice(&json_status.stdout).unwrap();
    let alice = roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "alice")
        .unwrap();
    assert_eq!(alice["role"], role);
}

#[test]
fn json_output_escapes_c1_controls_and_keeps_the_text_exact() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let text = format!("x{OSC52}\u{9b}2J\u{7f}y");
    server.script("lead", [Step::text(&text)]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_clean("json stdout", &out.stdout);
    assert!(!out.stdout.contains(&0x7f), "DEL is escaped too");
    assert_eq!(result_json(&out)["result"], text);
}

#[test]
fn the_repl_shows_a_disguised_command_in_full_before_asking() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    // Erase the line and return to its start, so a terminal would show only "ls -la"; the
    // second line is what a one-line summary would hide.
    let command = "touch one\u{1b}[2K\rls -la\ntouch two";
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": command})),
            Step::text(&format!("refused{OSC52}")),
        ],
    );
    let out = repl(ws.path(), &server, &[], "list files\nn\n/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean("REPL stdout", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    common::assert_contains(&text, "touch one\\x1b[2K\\rls -la\n    touch two");
    assert!(text.contains("refused\\x1b]52;c;ZXZpbA==\\x07"), "{text}");
    assert!(!ws.path().join("one").exists() && !ws.path().join("two").exists());
}
