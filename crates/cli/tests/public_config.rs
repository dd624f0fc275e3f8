//! A real public Claude Code configuration runs under troupe without an edit: a copy of
//! fcakyon/claude-codex-settings (`tests/fixtures/claude-codex-settings`, its source commit in
//! `SOURCE`) — `defaultMode: "auto"`, an `opus` alias redirected by `ANTHROPIC_DEFAULT_OPUS_MODEL`
//! in its `env`, Claude Code-only keys (`autoMode`, `attribution`, `advisorModel`, an output style
//! it does not ship), a status line, command hooks, and five plugins enabled from the
//! repository's own marketplace (their skills, agents and hooks).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use serde_json::Value;
use std::path::Path;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// Copies the fixture tree into `to`, keeping file modes (the hook scripts are executable).
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn names(init: &Value, key: &str) -> Vec<String> {
    init[key]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn fcakyon_claude_codex_settings_runs_without_an_edit() {
    let ws = TempWorkspace::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-codex-settings");
    copy_tree(&fixture, ws.path());
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "bash",
                serde_json::json!({"command": "echo from-the-project"}),
            ),
            Step::text("done"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    let err = stderr(&out);
    assert!(out.status.success(), "stderr: {err}");
    let events = json_lines(&out);
    let init = events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .expect("an init event");
    let result = events.iter().find(|e| e["type"] == "result").unwrap();
    assert_eq!(result["result"], "done", "{result}");
    // `model: "opus"`, with the settings' env redirecting the alias.
    assert_eq!(init["model"], "claude-opus-5", "{init}");
    assert_eq!(server.requests_for("lead")[0].model(), "claude-opus-5");
    // `defaultMode: "auto"` is a mode troupe has.
    assert_eq!(init["permissionMode"], "auto", "{init}");
    // The enabled plugins came from the repository's own marketplace.
    let skills = names(init, "skills");
    let agents = names(init, "agents");
    for skill in [
        "github-dev:create-pr",
        "simplify:simplify",
        "humanize:humanize",
    ] {
        assert!(skills.iter().any(|s| s == skill), "{skill} in {skills:?}");
    }
    assert!(
        agents.iter().any(|a| a == "github-dev:commit-creator"),
        "{agents:?}"
    );
    // The bash call ran (its PreToolUse hook let it through).
    let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(!is_error && text.contains("from-the-project"), "{text}");
    // What troupe does not honour is said once each, never an exit.
    for key in ["autoMode", "advisorModel"] {
        assert_eq!(err.matches(&format!("`{key}`")).count(), 1, "{key}: {err}");
    }
}
