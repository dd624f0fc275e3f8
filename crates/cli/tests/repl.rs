//! The REPL through the real binary with stdin piped: slash commands and permission questions.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{repl, stderr};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[test]
fn permission_question_is_answered_at_the_prompt() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "touch yes-file"})),
        Step::text("made it"),
        Step::tool("bash", json!({"command": "touch no-file"})),
        Step::text("refused"),
    ]);
    let out = repl(
        ws.path(),
        &server,
        &[],
        "make one\ny\nmake another\nn\n/cost\n/exit\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_contains(
        &text,
        "Allow bash \"touch yes-file\"? [y]es / [N]o / [a]lways \"touch:*\"",
    );
    assert!(ws.path().join("yes-file").exists());
    assert!(!ws.path().join("no-file").exists());
    let refusal = server.requests_for("lead")[3].last_tool_result().unwrap();
    assert!(refusal.1 && refusal.0.contains("refused"), "{refusal:?}");
    assert!(text.contains("tokens:"), "/cost prints usage: {text}");
}

#[test]
fn unknown_slash_command_is_named() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let out = repl(ws.path(), &server, &[], "/frobnicate\n/help\n/exit\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("unknown command /frobnicate"), "{text}");
    assert!(text.contains("/inbox"), "help lists the commands: {text}");
    assert!(
        server.journal().is_empty(),
        "slash commands never call the model"
    );
}

#[test]
fn continue_after_clear_starts_after_the_boundary() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::text("first answer"),
        Step::text("after clear"),
        Step::text("continued"),
    ]);
    let out = repl(
        ws.path(),
        &server,
        &[],
        "remember the word zebra\n/clear\nwhat now\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = common::run(
        common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic).args([
            "-p",
            "--continue",
            "and now",
        ]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    let last = requests.last().unwrap().messages();
    let text: Vec<String> = last.iter().map(|m| m.text()).collect();
    assert!(
        !text.iter().any(|t| t.contains("zebra")),
        "the cleared conversation stays cleared: {text:?}"
    );
    assert!(text.iter().any(|t| t.contains("what now")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("and now")), "{text:?}");
}

#[test]
fn a_hash_line_is_remembered_and_memory_lists_what_was_read() {
    let ws = TempWorkspace::new();
    std::fs::write(ws.path().join("CLAUDE.md"), "Project rules. @docs/style.md").unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    std::fs::write(ws.path().join("docs/style.md"), "Use tabs.").unwrap();
    let server = FakeServer::start();
    server.script("lead", [Step::text("noted")]);
    let out = repl(
        ws.path(),
        &server,
        &[],
        "# always run the linter\n/memory\nhello\n/exit\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("noted in"), "{text}");
    assert!(
        text.contains("docs/style.md") && text.contains("imported by CLAUDE.md"),
        "{text}"
    );
    let saved = std::fs::read_to_string(ws.path().join("CLAUDE.md")).unwrap();
    assert!(saved.ends_with("\n- always run the linter\n"), "{saved}");
    // The note line never reached the model; the imported file did.
    let system = server.requests_for("lead")[0].system();
    assert!(
        system.contains("Use tabs.") && system.contains("Project rules."),
        "{system}"
    );
    assert_eq!(server.requests_for("lead").len(), 1);
}

/// At the REPL the person answers a teammate's permission question by default, asked with the
/// teammate's name and the request's id (which `troupe team approve` would take too).
#[tokio::test]
async fn the_person_answers_a_teammates_question_at_the_repl_by_default() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(move |rec| {
        let called = |tool: &str| {
            rec.messages().iter().flat_map(|m| m.content.clone()).any(|b| {
                matches!(b, troupe_protocol::ContentBlock::ToolUse { name, .. } if name == tool)
            })
        };
        match rec.agent.as_str() {
            "lead" if !called("spawn_teammate") => Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Touch a file."}),
            ),
            "alice" if !called("bash") => Step::tool("bash", json!({"command": "touch asked.txt"})),
            _ => Step::text("ok"),
        }
    });
    let mut child = common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = common::StdoutLines::of(&mut child);
    stdin.write_all(b"go\n").unwrap();
    let limit = std::time::Duration::from_secs(60);
    let line = lines.wait_for("Allow bash \"touch asked.txt\"", limit);
    stdin.write_all(b"y\n").unwrap();
    let deadline = std::time::Instant::now() + limit;
    while !ws.path().join("asked.txt").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "alice never ran her command"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stdin.write_all(b"/exit\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let store = troupe_store::file::open(&ws.path().join(".troupe"), "default").unwrap();
    let perms = store
        .list_requests(&troupe_store::RequestFilter::default())
        .await
        .unwrap();
    assert_eq!(perms.len(), 1, "{perms:?}");
    assert!(
        line.starts_with(&format!("alice [{}]: ", perms[0].id)),
        "{line}"
    );
    assert_eq!(perms[0].status, troupe_protocol::RequestStatus::Approved);
    // It never went to the lead model.
    assert!(server
        .requests_for("lead")
        .iter()
        .all(|r| !r.all_text().contains("asks permission")));
}

/// One notice per event: a teammate's task result is shown once (when it reaches the lead),
/// not also when it is sent.
#[test]
fn a_teammates_result_is_shown_once() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(move |rec| {
        let spawned = rec.messages().iter().flat_map(|m| m.content.clone()).any(|b| {
            matches!(b, troupe_protocol::ContentBlock::ToolUse { name, .. } if name == "spawn_teammate")
        });
        match rec.agent.as_str() {
            "lead" if !spawned => Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Report."}),
            ),
            "lead" if rec.all_text().contains("All 12 tests pass") => Step::text("alice reported"),
            "lead" => Step::text("waiting for alice"),
            _ => Step::text("All 12 tests pass."),
        }
    });
    let mut child = common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = common::StdoutLines::of(&mut child);
    stdin.write_all(b"go\n").unwrap();
    let limit = std::time::Duration::from_secs(60);
    let mut shown = lines.until("alice reported", limit);
    stdin.write_all(b"/exit\n").unwrap();
    drop(stdin);
    shown.extend(lines.rest());
    assert!(child.wait().unwrap().success());
    let results: Vec<&String> = shown
        .iter()
        .filter(|l| l.contains("(task result)"))
        .collect();
    assert_eq!(results.len(), 1, "{shown:?}");
    assert!(
        results[0].starts_with("✉ alice → lead (task result): All 12 tests pass."),
        "{shown:?}"
    );
}

/// `!cmd` runs a command as the person and the model sees it with the next prompt, in Claude
/// Code's form; `@path` attaches a file; `/permissions` shows the mode and rules.
#[test]
fn bang_runs_a_command_and_at_attaches_a_file() {
    let ws = TempWorkspace::new();
    ws.write("notes.txt", "the notes say 42\n");
    let server = FakeServer::start();
    server.script("lead", [Step::text("it said hello")]);
    let out = repl(
        ws.path(),
        &server,
        &["--allowedTools", "Bash(git status)"],
        "!echo hello-from-shell\nwhat did it say? see @notes.txt\n/permissions\n/exit\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("hello-from-shell"), "{text}");
    let sent = server.requests_for("lead")[0].messages()[0].text();
    assert!(
        sent.starts_with(
            "<bash-input>echo hello-from-shell</bash-input>\n<bash-stdout>hello-from-shell</bash-stdout><bash-stderr></bash-stderr>\n\nwhat did it say? see @notes.txt"
        ),
        "{sent}"
    );
    common::assert_contains(
        &sent,
        "<file path=\"notes.txt\">\nthe notes say 42\n\n</file>",
    );
    assert_eq!(
        server.requests_for("lead").len(),
        1,
        "! alone calls no model"
    );
    assert!(text.contains("permission mode: default"), "{text}");
    assert!(text.contains("allow: Bash(git status)"), "{text}");
}
