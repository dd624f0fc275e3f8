//! Claude Code's command line as its users type it, through the binary: its subcommands troupe
//! lacks are refused by name instead of becoming a prompt, and the flags of `claude --help`
//! troupe had no place for are honoured (`--disable-slash-commands`,
//! `--append-system-prompt-file`, `-v`) or accepted with a note naming them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, subcommand, troupe};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("ok"));
    server
}

#[test]
fn claude_codes_subcommands_troupe_lacks_are_errors_never_prompts() {
    let ws = TempWorkspace::new();
    let server = model();
    for (args, word) in [
        (&["update"][..], "update"),
        (&["install", "stable"], "install"),
        (&["migrate-installer"], "migrate-installer"),
        (&["setup-token"], "setup-token"),
    ] {
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("troupe has no `{word}` (Claude Code's")),
            "{err}"
        );
        // It names troupe's own commands.
        assert!(err.contains("doctor") && err.contains("team"), "{err}");
    }
    assert!(
        server.journal().is_empty(),
        "no model call: nothing became a prompt"
    );
    assert!(!ws.exists(".troupe/sessions"), "no session was started");

    // A word of troupe's own still is its subcommand, and `-p update` a prompt.
    let out = subcommand(ws.path(), &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "update",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.requests_for("lead")[0].all_text().contains("update"));
}

#[test]
fn disable_slash_commands_sends_the_line_as_it_is_and_a_prompt_file_is_appended() {
    let ws = TempWorkspace::new();
    ws.write(".claude/commands/review.md", "Review the diff carefully.\n");
    let file = ws.write("extra.txt", "Always answer in haiku.");
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/review now",
        "--output-format",
        "json",
        "--disable-slash-commands",
        "--append-system-prompt-file",
        file.to_str().unwrap(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "ok");
    let request = &server.requests_for("lead")[0];
    let text = request.all_text();
    assert!(text.contains("/review now"), "{text}");
    assert!(!text.contains("Review the diff carefully."), "{text}");
    assert!(request.system().contains("Always answer in haiku."));

    // Without the flag, the command expands (the flag made the difference).
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "/review now"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = server.requests_for("lead")[0].all_text();
    assert!(text.contains("Review the diff carefully."), "{text}");
}

#[test]
fn flags_troupe_cannot_honour_run_with_a_note_naming_each() {
    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--bare",
        "--from-pr",
        "12",
        "--chrome",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for flag in ["--bare", "--from-pr", "--chrome"] {
        assert!(
            err.contains(&format!("{flag} is accepted but not honoured")),
            "{flag}: {err}"
        );
    }
    // Claude Code's `-v` prints the version.
    let out = subcommand(ws.path(), &["-v"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("troupe "));
}

#[test]
fn replay_user_messages_echoes_each_user_message_of_a_stream_json_session() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let server = model();
    let session = |replay: bool| {
        let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
        cmd.args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        if replay {
            cmd.arg("--replay-user-messages");
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let user = serde_json::json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
            "message": {"role": "user", "content": "echo me"}});
        writeln!(stdin, "{user}").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        common::json_lines(&out)
    };
    let lines = session(true);
    let replayed: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "user" && l["isReplay"] == true)
        .collect();
    assert_eq!(replayed.len(), 1, "{lines:?}");
    assert_eq!(replayed[0]["message"]["content"], "echo me");
    assert!(lines.iter().any(|l| l["type"] == "result"), "{lines:?}");
    // Without the flag, nothing is echoed.
    let lines = session(false);
    assert!(!lines.iter().any(|l| l["isReplay"] == true), "{lines:?}");
}
