//! `troupe config` and the Claude Code prompt flags through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, stderr, subcommand};
use std::process::{Command, Output};

/// `troupe ARGS` in `ws`, with a home of its own so the machine's settings stay out.
fn troupe_here(ws: &std::path::Path, args: &[&str]) -> Output {
    common::run(
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws)
            .env("HOME", ws.join(".home"))
            .args(args),
    )
}
use troupe_testkit::{FakeServer, Step, TempWorkspace};

fn write(ws: &std::path::Path, rel: &str, text: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn config_shows_the_files_read_and_each_rule_with_its_origin() {
    let ws = TempWorkspace::new();
    write(
        ws.path(),
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(git status)"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"}, "env": {"SECRET_TOKEN": "hidden-value"}}"#,
    );
    write(
        ws.path(),
        ".troupe/settings.json",
        r#"{"permissions": {"ask": ["Bash(git push:*)"]}, "model": "claude-x"}"#,
    );
    write(ws.path(), "CLAUDE.md", "rules");
    write(
        ws.path(),
        ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: PDFs\n---\nbody",
    );
    write(
        ws.path(),
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: reviews\n---\nbody",
    );
    let out = troupe_here(ws.path(), &["config", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let read: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["read"] == true)
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(read.len(), 2, "{report}");
    assert!(
        read[0].ends_with(".claude/settings.json") && read[1].ends_with(".troupe/settings.json")
    );
    assert_eq!(report["permissions"]["deny"][0]["rule"], "Read(./.env)");
    assert!(report["permissions"]["deny"][0]["from"]
        .as_str()
        .unwrap()
        .ends_with(".claude/settings.json"));
    assert_eq!(report["permissions"]["ask"][0]["rule"], "Bash(git push:*)");
    assert_eq!(report["permissions"]["defaultMode"], "acceptEdits");
    assert_eq!(report["model"], "claude-x");
    assert_eq!(report["env"][0], "SECRET_TOKEN");
    assert!(
        !out.stdout.windows(12).any(|w| w == b"hidden-value"),
        "env values are not shown"
    );
    assert_eq!(report["memory"][0], "CLAUDE.md");
    assert_eq!(report["skills"][0], "pdf");
    assert_eq!(report["agents"][0], "reviewer");

    let out = troupe_here(ws.path(), &["config"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("deny  Read(./.env)"), "{text}");
    assert!(
        text.contains("absent"),
        "files not present are listed too: {text}"
    );
}

#[test]
fn config_names_a_malformed_file_and_fails() {
    let ws = TempWorkspace::new();
    write(
        ws.path(),
        ".claude/settings.json",
        "{\n  \"permissions\": [\n",
    );
    let out = troupe_here(ws.path(), &["config"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(".claude/settings.json") && err.contains("line"),
        "{err}"
    );
}

#[test]
fn system_prompt_flags_replace_the_identity_and_append_a_section() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("ok")]);
    let out = headless_in_mode(
        ws.path(),
        &server,
        "hi",
        "default",
        &[
            "--system-prompt",
            "You are a release bot.",
            "--append-system-prompt",
            "Always answer in French.",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let system = server.requests_for("lead")[0].system();
    // The identity and the appended section are this agent's part of the prompt: after the
    // part agents share (cached once for all), before the session's date.
    let identity = system.find("# You\nYou are a release bot.").expect(&system);
    let appended = system.find("Always answer in French.").expect(&system);
    let date = system.find("# Session\n- Date:").expect(&system);
    assert!(identity < appended && appended < date, "{system}");
    assert!(!system.contains("You are troupe"), "{system}");
}

#[test]
fn an_unknown_flag_is_a_clear_error() {
    let ws = TempWorkspace::new();
    let out = subcommand(ws.path(), &["-p", "hi", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    common::assert_stderr_has(&out, "unexpected argument '--frobnicate'");
}

#[test]
fn config_names_the_model_a_run_would_use_when_no_setting_names_one() {
    let ws = TempWorkspace::new();
    let out = common::run(
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws.path())
            .env("HOME", ws.path().join(".home"))
            .env("ANTHROPIC_API_KEY", "test-key")
            .env_remove("OPENAI_BASE_URL")
            .env("TROUPE_MODEL", "claude-haiku-4-5")
            .args(["config"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    common::assert_contains(&text, "model: claude-haiku-4-5 (TROUPE_MODEL)");
}
