//! The REPL commands a Claude Code user reaches for in the first hour, through the binary:
//! `/status`, `/init`, `/doctor`, `/config`, and `/msg` to one teammate.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use serde_json::json;
use std::io::Write;
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn status_shows_the_session_at_a_glance() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([]);
    let out = common::repl(ws.path(), &server, &[], "/status\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for key in [
        "version",
        "model",
        "workspace",
        "session",
        "team",
        "permission mode",
        "mcp servers",
    ] {
        assert!(text.contains(key), "{key} missing from:\n{text}");
    }
    assert!(
        text.contains("permission mode default") || text.contains("permission mode  default"),
        "{text}"
    );
}

#[test]
fn init_asks_the_lead_to_write_claude_md() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("wrote CLAUDE.md")]);
    let out = common::repl(ws.path(), &server, &[], "/init\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 1);
    let asked = requests[0].all_text();
    assert!(
        asked.contains("CLAUDE.md") && asked.contains("test"),
        "{asked}"
    );
    assert!(stdout(&out).contains("wrote CLAUDE.md"));
}

#[test]
fn review_and_security_review_are_bundled_prompts_listed_in_help() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("looks fine"), Step::text("no findings")]);
    let input = "/help\n/review mind the error paths\n/security-review\n/exit\n";
    let out = common::repl(ws.path(), &server, &[], input);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("/review") && text.contains("/security-review"),
        "{text}"
    );
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 2);
    let review = requests[0].all_text();
    assert!(
        review.contains("git diff") && review.contains("current branch"),
        "{review}"
    );
    assert!(review.contains("Also: mind the error paths"), "{review}");
    let security = requests[1].all_text();
    assert!(security.contains("security review") && security.contains("git diff"));
    assert!(security.contains("injection"), "{security}");
}

#[test]
fn doctor_and_config_report_inside_the_repl() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([]);
    // Doctor's model check is a real call, named as its own agent.
    server.script("doctor", [Step::text("ok")]);
    let doctor = stdout(&common::repl(ws.path(), &server, &[], "/doctor\n/exit\n"));
    assert!(doctor.contains("troupe doctor —"), "{doctor}");
    // The model check reached the session's model server (the fake one answers).
    assert!(doctor.lines().any(|l| l.starts_with("✓ model")), "{doctor}");
    // `/config` is `troupe config` for the session's workspace, line for line.
    let config = stdout(&common::repl(ws.path(), &server, &[], "/config\n/exit\n"));
    let command = common::run(
        common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic).arg("config"),
    );
    let expected = String::from_utf8_lossy(&command.stdout);
    assert!(expected.contains("settings files"), "{expected}");
    assert!(
        config.contains(expected.trim()),
        "{config}\n---\n{expected}"
    );
}

#[test]
fn msg_names_what_is_wrong_without_a_teammate() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([]);
    let out = common::repl(ws.path(), &server, &[], "/msg\n/msg nobody hello\n/exit\n");
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("usage: /msg <teammate> <message>"));
    let err = common::stderr(&out);
    assert!(err.contains("nobody"), "{err}");
    assert!(
        server.requests_for("lead").is_empty(),
        "nothing went to the lead"
    );
}

/// The person talks to alice directly; alice's reply arrives as mail and the lead hears it.
#[test]
fn msg_sends_to_one_teammate_and_the_reply_comes_back_as_mail() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(move |rec| {
        let spawned = rec.messages().iter().flat_map(|m| m.content.clone()).any(|b| {
            matches!(b, troupe_protocol::ContentBlock::ToolUse { name, .. } if name == "spawn_teammate")
        });
        match rec.agent.as_str() {
            "lead" if !spawned => Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Wait for the person."}),
            ),
            "lead" => Step::text("noted"),
            _ if rec.all_text().contains("use tabs") => Step::text("Switched to tabs."),
            _ => Step::text("ready"),
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
    stdin.write_all(b"start alice\n").unwrap();
    let limit = Duration::from_secs(60);
    lines.wait_for("alice → lead", limit);
    stdin.write_all(b"/msg alice please use tabs\n").unwrap();
    lines.wait_for("sent to alice", limit);
    let shown = lines.until("Switched to tabs.", limit);
    stdin.write_all(b"/exit\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success(), "{shown:?}");
    let to_alice: Vec<_> = server
        .requests_for("alice")
        .into_iter()
        .filter(|r| r.all_text().contains("please use tabs"))
        .collect();
    assert!(
        !to_alice.is_empty(),
        "alice never read the person's message"
    );
    assert!(!server.requests_for("lead").iter().any(|r| r.all_text().contains("please use tabs") && !r.all_text().contains("Switched")),
        "the person's message went to the lead");
}
