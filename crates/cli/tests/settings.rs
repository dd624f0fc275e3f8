//! Settings files through the real binary: rules and the default mode from
//! `.claude/settings.json` hold in headless runs, `--settings` adds a layer, and a malformed
//! file is an error naming the file and the line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// A lead that tries `touch <file>` once, then answers.
fn lead_touches(server: &FakeServer, file: &str) {
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": format!("touch {file}")})),
            Step::text("tried"),
        ],
    );
}

#[test]
fn a_deny_rule_in_claude_settings_holds_even_when_bypassing_permissions() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Bash(touch:*)"]}, "someClaudeKey": true}"#,
    );
    let server = FakeServer::start();
    lead_touches(&server, "denied-file");
    let out = common::headless_in_mode(ws.path(), &server, "touch it", "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("denied-file"), "the deny rule must hold");
    let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(is_error && text.contains("Bash(touch:*)"), "{text}");
    assert_eq!(result_json(&out)["result"], "tried");
}

#[test]
fn default_mode_comes_from_settings_unless_a_mode_is_given() {
    let ws = TempWorkspace::new();
    ws.write(
        ".troupe/settings.json",
        r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
    );
    let server = FakeServer::start();
    lead_touches(&server, "made-file");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "touch it"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        ws.exists("made-file"),
        "defaultMode bypassPermissions applies"
    );

    // An explicit mode wins over the settings: headless default mode refuses commands.
    lead_touches(&server, "second-file");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "touch it",
        "--permission-mode",
        "default",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("second-file"), "--permission-mode default wins");
}

#[test]
fn inline_settings_add_a_deny_rule() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    lead_touches(&server, "inline-file");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "touch it",
        "--permission-mode",
        "bypassPermissions",
        "--settings",
        r#"{"permissions": {"deny": ["Bash"]}}"#,
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("inline-file"));
}

#[test]
fn a_malformed_settings_file_is_an_error_naming_file_and_line() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        "{\n  \"permissions\": {\n    \"deny\": [\"Bash\",]\n  }\n}\n",
    );
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(".claude/settings.json"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(
        server.journal().is_empty(),
        "no model call with bad settings"
    );
}

#[test]
fn teammates_in_either_mode_run_with_the_leads_settings() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        ws.write("victim.txt", "keep me");
        ws.write(
            ".claude/settings.json",
            r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
        );
        let server = FakeServer::start();
        server.set_fallback(|req| {
            Step::reply(troupe_testkit::Reply::text(format!(
                "ack from {}",
                req.agent
            )))
        });
        common::lead_spawns(
            &server,
            json!({"name": "bob", "role": "tidier", "prompt": "tidy"}),
        );
        server.script(
            "bob",
            [
                Step::tool(
                    "bash",
                    json!({"command": "echo \"$TROUPE_MARK\" > mark.txt"}),
                ),
                Step::tool("bash", json!({"command": "rm victim.txt"})),
                Step::text("bob tried"),
            ],
        );
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "x",
            "--teammate-mode",
            mode,
            "--settings",
            r#"{"permissions": {"defaultMode": "bypassPermissions"}, "env": {"TROUPE_MARK": "from-settings"}}"#,
        ]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        assert_eq!(
            ws.read("victim.txt"),
            "keep me",
            "{mode}: the deny rule held"
        );
        assert_eq!(
            ws.read("mark.txt").trim(),
            "from-settings",
            "{mode}: --settings reached the teammate (defaultMode and env)"
        );
        let bob = server.requests_for("bob");
        let (content, is_error) = bob[2].last_tool_result().expect("a tool result");
        assert!(
            is_error && content.contains("Bash(rm:*)"),
            "{mode}: {content}"
        );
    }
}
