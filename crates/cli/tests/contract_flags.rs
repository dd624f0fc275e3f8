//! Claude Code's headless flags and variables as the Agent SDK and scripts pass them, through
//! the real binary: `ANTHROPIC_AUTH_TOKEN`/`ANTHROPIC_MODEL`, `--tools`, a tool denied whole
//! left out of the tool list, `--system-prompt-file`, `--session-id` and `--fork-session`, the
//! `dontAsk` mode, the accepted-with-a-note flags, and piped stdin appended to the prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use std::io::Write;
use std::process::Stdio;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// A model that answers every request with a line of text (scripted steps go first).
fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("ok"));
    server
}

fn lead_requests(server: &FakeServer) -> Vec<troupe_testkit::Recorded> {
    server.requests_for("lead")
}

#[test]
fn an_auth_token_is_sent_as_a_bearer_and_anthropic_model_picks_the_model() {
    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_AUTH_TOKEN", "gateway-token")
        .env("ANTHROPIC_MODEL", "claude-from-env")
        .args(["-p", "hi", "--output-format", "json"]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let request = &lead_requests(&server)[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer gateway-token")
    );
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(request.model(), "claude-from-env");
}

#[test]
fn tools_restricts_the_offer_and_a_tool_denied_whole_is_not_offered() {
    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--tools",
        "Read,Grep",
    ]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let offered = lead_requests(&server)[0].tool_names();
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
    assert!(offered.contains(&"grep".to_string()), "{offered:?}");
    for gone in [
        "bash",
        "write_file",
        "edit_file",
        "glob",
        "todo_write",
        "task",
    ] {
        assert!(
            !offered.contains(&gone.to_string()),
            "{gone} offered: {offered:?}"
        );
    }
    // The team's tools are built-in tools too: not named, not offered.
    for gone in ["spawn_teammate", "send_message", "create_task"] {
        assert!(
            !offered.contains(&gone.to_string()),
            "{gone} offered: {offered:?}"
        );
    }

    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--disallowedTools",
        "Bash",
    ]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let offered = lead_requests(&server)[0].tool_names();
    assert!(!offered.contains(&"bash".to_string()), "{offered:?}");
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
}

#[test]
fn system_prompt_file_replaces_the_identity() {
    let ws = TempWorkspace::new();
    let file = ws.write("prompt.txt", "You are the contract tester.");
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--system-prompt-file",
        file.to_str().unwrap(),
    ]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert!(lead_requests(&server)[0]
        .system()
        .contains("You are the contract tester."));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--system-prompt-file",
        "missing.txt",
    ]));
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "--system-prompt-file missing.txt");
}

#[test]
fn session_id_names_the_session_and_fork_session_copies_it() {
    let ws = TempWorkspace::new();
    let server = model();
    let id = "6f1c2a4e-8d2b-4c1e-9a3f-0b5d7e9f1a2c";
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "first",
        "--output-format",
        "json",
        "--session-id",
        id,
    ]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(result_json(&out)["session_id"], id);
    // The same id again is refused: it names an existing session.
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "again", "--session-id", id]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--session-id",
        "not-a-uuid",
    ]));
    assert!(stderr(&out).contains("not a UUID"), "{}", stderr(&out));

    // Forking: a new id, the old conversation carried over, the old session untouched.
    let before = std::fs::read(ws.join(format!(".troupe/sessions/{id}.jsonl"))).unwrap();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "second",
        "--output-format",
        "json",
        "--resume",
        id,
        "--fork-session",
    ]));
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let forked = result_json(&out)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(forked, id);
    let last = lead_requests(&server).pop().unwrap();
    assert!(
        last.all_text().contains("first"),
        "the fork continues the conversation"
    );
    let after = std::fs::read(ws.join(format!(".troupe/sessions/{id}.jsonl"))).unwrap();
    assert_eq!(before, after, "the forked-from session is untouched");
}

#[test]
fn dont_ask_refuses_without_asking_and_notes_name_what_is_not_applied() {
    let ws = TempWorkspace::new();
    let server = model();
    server.script(
        "lead",
        [
            Step::tool("bash", serde_json::json!({"command": "touch made.txt"})),
            Step::text("done"),
        ],
    );
    let out = common::headless_in_mode(ws.path(), &server, "go", "dontAsk", &["--betas", "x"]);
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert!(!ws.exists("made.txt"));
    let result = result_json(&out);
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
    let (text, is_error) = lead_requests(&server)
        .pop()
        .unwrap()
        .last_tool_result()
        .unwrap();
    assert!(is_error);
    assert!(text.contains("dontAsk"), "{text}");
    common::assert_stderr_has(&out, "--betas is accepted but no beta headers are sent");
}

#[test]
fn piped_stdin_is_appended_to_the_prompt() {
    let ws = TempWorkspace::new();
    let server = model();
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "review this", "--output-format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"diff --git a/x b/x")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let text = lead_requests(&server)[0].all_text();
    assert!(text.contains("review this"), "{text}");
    assert!(text.contains("diff --git a/x b/x"), "{text}");
}

#[test]
fn the_sdks_other_flags_are_accepted_and_the_ones_troupe_has_are_honoured() {
    let ws = TempWorkspace::new();
    let server = model();
    let log = ws.path().join("logs/debug.log");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--no-session-persistence",
        "--effort=high",
        "--thinking=adaptive",
        "--allow-dangerously-skip-permissions",
        "--plugin-dir=/tmp",
        "--await-initialize",
        "--name=nightly",
        "--debug-file",
        log.to_str().unwrap(),
        "--agents",
        r#"{"reviewer": {"description": "Reviews code", "prompt": "You review."}}"#,
    ]));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(result_json(&out)["result"], "ok");
    // Honoured, so no note; the others said once each, never refused.
    assert!(!err.contains("--effort"), "{err}");
    // A plugin folder is loaded; one without a manifest is a warning, never a refusal.
    assert!(
        err.contains("--plugin-dir /tmp: /tmp has no .claude-plugin/plugin.json"),
        "{err}"
    );
    // No session kept: nothing for --continue or `troupe sessions`.
    let kept = std::fs::read_dir(ws.path().join(".troupe/sessions"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(kept, 0, "--no-session-persistence kept a transcript");
    // The debug log went to the file.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.is_empty());
    // --agents reached the task tool's catalogue.
    let request = &lead_requests(&server)[0];
    let sent = request.body.to_string();
    assert!(sent.contains("Reviews code"), "{sent}");
    // --thinking/--effort asked for extended thinking (thinking.rs covers the details).
    assert!(request.body.get("thinking").is_some(), "{sent}");
}
