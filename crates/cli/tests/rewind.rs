//! `/rewind` through the binary: the files the lead's tools changed (a file tool's and a bash
//! command's) go back to before the chosen prompt, the conversation is cut before it, and both
//! hold across `--resume`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use serde_json::json;
use troupe_protocol::Role;
use troupe_testkit::{Step, TempWorkspace};

const BYPASS: [&str; 2] = ["--permission-mode", "bypassPermissions"];

fn session_id(ws: &TempWorkspace) -> String {
    let dir = ws.path().join(".troupe/sessions");
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".jsonl").map(str::to_string)
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

/// The user texts of the lead's last request.
fn last_user_texts(server: &troupe_testkit::FakeServer) -> Vec<String> {
    let requests = server.requests_for("lead");
    let last = requests.last().expect("a request");
    last.messages()
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .filter(|t| !t.starts_with('<') && !t.is_empty())
        .collect()
}

#[test]
fn rewind_puts_back_code_and_conversation_and_survives_resume() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("a.txt", "one\n");
    ws.write("dirty.txt", "committed\n");
    ws.git_commit_all("start");
    ws.write("dirty.txt", "uncommitted\n");
    let server = common::lead_server([
        Step::tool(
            "write_file",
            json!({"path": "new.txt", "content": "hello\n"}),
        ),
        Step::text("wrote new.txt"),
        Step::tool(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        Step::tool(
            "bash",
            json!({"command": "echo made > bash.txt && echo more >> dirty.txt && echo three >> a.txt"}),
        ),
        Step::text("edited"),
        Step::text("third done"),
        Step::text("fourth done"),
    ]);
    let out = common::repl(ws.path(), &server, &BYPASS, "first\nsecond\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ws.read("a.txt"), "two\nthree\n");
    assert!(ws.exists("new.txt") && ws.exists("bash.txt"));
    let id = session_id(&ws);

    // Resumed: the prompts are listed newest first; 2 is "first", 1 restores both.
    let mut args = vec!["--resume", id.as_str()];
    args.extend(BYPASS);
    let out = common::repl(ws.path(), &server, &args, "/rewind\n2\n1\nthird\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1. second"), "{text}");
    assert!(text.contains("2. first"), "{text}");
    assert!(text.contains("put back 4 files"), "{text}");
    assert!(text.contains("rewound to before that prompt"), "{text}");
    assert_eq!(ws.read("a.txt"), "one\n");
    assert_eq!(ws.read("dirty.txt"), "uncommitted\n");
    assert!(!ws.exists("new.txt") && !ws.exists("bash.txt"));
    assert_eq!(last_user_texts(&server), ["third"]);

    // The rewound conversation is what a later resume finds.
    let out = common::repl(ws.path(), &server, &args, "fourth\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    let texts = last_user_texts(&server);
    assert_eq!(
        texts.first().map(String::as_str),
        Some("third"),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t == "first" || t == "second"));
}

#[test]
fn rewinding_only_the_code_keeps_the_conversation_and_cancel_changes_nothing() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "write_file",
            json!({"path": "a.txt", "content": "changed\n"}),
        ),
        Step::text("done"),
        Step::text("after"),
    ]);
    ws.write("a.txt", "original\n");
    let input = "change it\n/rewind\n1\nq\n/rewind\n1\n3\nnext\n/exit\n";
    let out = common::repl(ws.path(), &server, &BYPASS, input);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rewind cancelled"), "{text}");
    assert!(text.contains("put back 1 file"), "{text}");
    assert_eq!(ws.read("a.txt"), "original\n");
    let texts = last_user_texts(&server);
    assert_eq!(texts.first().map(String::as_str), Some("change it"));
    assert_eq!(texts.last().map(String::as_str), Some("next"));
}

#[test]
fn headless_keeps_no_checkpoints() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("write_file", json!({"path": "a.txt", "content": "x\n"})),
        Step::text("done"),
    ]);
    let out = common::headless_bypass(ws.path(), &server, "write", &[]);
    assert!(out.status.success(), "{out:?}");
    let id = session_id(&ws);
    let store = ws
        .path()
        .join(".troupe/sessions")
        .join(id)
        .join("checkpoints");
    assert!(!store.exists());
}

#[test]
fn export_writes_the_conversation_as_markdown() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "echo from-the-tool"})),
        Step::text("**all** done"),
    ]);
    let input = "/export\nrun it\n/export notes/out.md\n/export\n/exit\n";
    std::fs::create_dir_all(ws.path().join("notes")).unwrap();
    let out = common::repl(ws.path(), &server, &BYPASS, input);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nothing to export"), "{text}");
    assert!(text.contains("exported to"), "{text}");
    let md = ws.read("notes/out.md");
    assert!(md.contains("## You\n\nrun it"), "{md}");
    assert!(md.contains("**⏺ bash**(`echo from-the-tool`)"), "{md}");
    assert!(md.contains("```\nfrom-the-tool\n"), "{md}");
    assert!(md.contains("\n\n**all** done\n"), "{md}");
    assert!(!md.contains("\n\n\n"), "{md}");
    let dated: Vec<_> = std::fs::read_dir(ws.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("conversation-"))
        .collect();
    assert_eq!(dated.len(), 1);
}

#[test]
fn export_to_the_clipboard_uses_a_clipboard_program_or_says_there_is_none() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("answered")]);
    let bin = ws.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let copied = ws.path().join("copied.md");
    let script = bin.join("wl-copy");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat > '{}'\n", copied.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |path: String| {
        let mut child = common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic)
            .args(BYPASS)
            .env("PATH", path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let input = "hi\n/export --clipboard\n/exit\n";
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let path = std::env::var("PATH").unwrap_or_default();
    let text = run(format!("{}:{path}", bin.display()));
    assert!(
        text.contains("copied to the clipboard with wl-copy"),
        "{text}"
    );
    assert!(std::fs::read_to_string(&copied)
        .unwrap()
        .contains("## You\n\nhi"));
    std::fs::remove_file(&script).unwrap();
    let text = run(bin.display().to_string());
    assert!(text.contains("no clipboard program found"), "{text}");
}

#[test]
fn a_subagents_changes_are_the_prompts_and_rewind_with_it() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "task",
            json!({"description": "write it", "prompt": "write sub.txt"}),
        ),
        Step::text("delegated"),
    ]);
    server.script(
        "subagent",
        [
            Step::tool(
                "write_file",
                json!({"path": "sub.txt", "content": "by the subagent\n"}),
            ),
            Step::text("written"),
        ],
    );
    let input = "delegate\n/rewind\n1\n3\n/exit\n";
    let out = common::repl(ws.path(), &server, &BYPASS, input);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(server.requests_for("subagent").len(), 2, "{text}");
    assert!(text.contains("put back 1 file"), "{text}");
    assert!(!ws.exists("sub.txt"));
}

#[test]
fn without_file_checkpointing_only_the_conversation_rewinds() {
    let ws = TempWorkspace::new();
    ws.write(
        ".home/.claude/settings.json",
        r#"{"fileCheckpointingEnabled": false}"#,
    );
    let server = common::lead_server([
        Step::tool("write_file", json!({"path": "a.txt", "content": "new\n"})),
        Step::text("done"),
        Step::text("again"),
    ]);
    let input = "change it\n/rewind\n1\n1\nonce more\n/exit\n";
    let out = common::repl(ws.path(), &server, &BYPASS, input);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no file to put back"), "{text}");
    assert!(ws.exists("a.txt"));
    assert_eq!(last_user_texts(&server), ["once more"]);
    let store = ws.path().join(".troupe/sessions").join(session_id(&ws));
    assert!(!store.join("checkpoints/blobs").exists());
}

#[test]
fn the_list_shows_what_was_typed_not_what_was_attached() {
    let ws = TempWorkspace::new();
    ws.write("notes.md", "attached text\n");
    let server = common::lead_server([Step::text("seen")]);
    let input = "!echo context\nread @notes.md please\n/rewind\nq\n/exit\n";
    let out = common::repl(ws.path(), &server, &BYPASS, input);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  1. read @notes.md please ·"), "{text}");
    let sent = server.requests_for("lead")[0].all_text();
    assert!(
        sent.contains("attached text") && sent.contains("context"),
        "{sent}"
    );
}
