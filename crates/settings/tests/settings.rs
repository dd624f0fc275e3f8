//! Reading, validating and merging settings files as a Claude Code project carries them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::fs;
use std::path::Path;
use troupe_settings::{load, SandboxMode, SandboxNetwork, Scope, Settings, SettingsError};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

#[test]
fn known_keys_are_typed_and_unknown_keys_kept() {
    let settings = Settings::parse(
        r#"{
          "permissions": {"allow": ["Bash(cargo test:*)"], "deny": ["Bash(rm:*)"], "defaultMode": "acceptEdits"},
          "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]}]},
          "env": {"RUST_LOG": "debug"},
          "model": "claude-opus-4-1",
          "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}},
          "sandbox": {"mode": "auto", "writableRoots": ["/var/cache/build"]},
          "teammate_mode": "process",
          "statusLine": {"type": "command", "command": "echo hi"}
        }"#,
        "test",
    )
    .expect("parses");
    assert_eq!(settings.permissions.deny, ["Bash(rm:*)"]);
    assert_eq!(
        settings.permissions.default_mode.as_deref(),
        Some("acceptEdits")
    );
    assert_eq!(
        settings.hooks["PreToolUse"][0].hooks[0].command,
        "./check.sh"
    );
    assert_eq!(settings.hooks["PreToolUse"][0].hooks[0].timeout, Some(5));
    assert_eq!(settings.env["RUST_LOG"], "debug");
    assert_eq!(settings.model.as_deref(), Some("claude-opus-4-1"));
    assert!(settings.mcp_servers.contains_key("time"));
    let sandbox = settings.sandbox.expect("sandbox");
    assert_eq!(sandbox.mode, SandboxMode::Auto);
    assert_eq!(sandbox.writable_roots[0], Path::new("/var/cache/build"));
    assert_eq!(settings.teammate_mode.as_deref(), Some("process"));
    assert!(
        settings.other.contains_key("statusLine"),
        "unknown key kept"
    );
}

#[test]
fn sandbox_accepts_the_short_spelling_and_refuses_relative_roots() {
    let off = Settings::parse(r#"{"sandbox": "off"}"#, "t").expect("parses");
    assert_eq!(off.sandbox.expect("set").mode, SandboxMode::Off);
    let err = Settings::parse(r#"{"sandbox": {"writableRoots": ["rel/dir"]}}"#, "t")
        .expect_err("relative root refused");
    assert!(err.to_string().contains("sandbox"), "{err}");
    let err = Settings::parse(r#"{"sandbox": "sometimes"}"#, "t").expect_err("bad mode");
    assert!(err.to_string().contains("\"auto\""), "{err}");
}

#[test]
fn sandbox_network_is_inet_by_default_and_may_be_widened_or_denied() {
    let short = Settings::parse(r#"{"sandbox": "auto"}"#, "t").expect("parses");
    assert_eq!(short.sandbox.expect("set").network, SandboxNetwork::Inet);
    let full = Settings::parse(r#"{"sandbox": {"writableRoots": []}}"#, "t").expect("parses");
    assert_eq!(full.sandbox.expect("set").network, SandboxNetwork::Inet);
    let allow = Settings::parse(r#"{"sandbox": {"network": "allow"}}"#, "t").expect("parses");
    assert_eq!(allow.sandbox.expect("set").network, SandboxNetwork::Allow);
    let deny = Settings::parse(r#"{"sandbox": {"network": "deny"}}"#, "t").expect("parses");
    let deny = deny.sandbox.expect("set");
    assert_eq!(deny.network, SandboxNetwork::Deny);
    assert_eq!(deny.mode, SandboxMode::Auto);
    let err = Settings::parse(r#"{"sandbox": {"network": "sometimes"}}"#, "t")
        .expect_err("bad network value");
    assert!(err.to_string().contains("\"network\""), "{err}");
}

#[test]
fn a_malformed_file_names_the_file_and_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(".troupe/settings.json");
    write(
        &path,
        "{\n  \"model\": \"x\",\n  \"permissions\": {\"allow\": [\"Bash\",]}\n}\n",
    );
    let err = load(dir.path(), None, None).expect_err("malformed");
    match &err {
        SettingsError::Parse { origin, line, .. } => {
            assert!(origin.ends_with(".troupe/settings.json"), "{origin}");
            assert_eq!(*line, 3);
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn a_known_key_of_the_wrong_type_is_an_error_with_its_line() {
    let err = Settings::parse(
        "{\n\"permissions\": {\"deny\": \"Bash(rm:*)\"}\n}",
        "f.json",
    )
    .expect_err("string where a list belongs");
    assert!(err.to_string().starts_with("f.json, line 2"), "{err}");
}

#[test]
fn a_mode_troupe_lacks_is_a_warning_and_other_hook_types_load() {
    let (settings, warnings) = Settings::parse_checked(
        r#"{"permissions": {"defaultMode": "yolo"}, "hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "done?", "model": "m"}]}]}}"#,
        "f.json",
    )
    .expect("loads");
    assert_eq!(settings.permissions.default_mode, None);
    let texts: Vec<String> = warnings.iter().map(|w| w.text.clone()).collect();
    assert!(
        texts[0].starts_with("f.json: `permissions.defaultMode` `yolo` is not a permission mode"),
        "{texts:?}"
    );
    let hook = &settings.hooks["Stop"][0].hooks[0];
    assert_eq!(hook.kind, "prompt");
    assert_eq!(hook.other["prompt"], "done?");
    assert_eq!(hook.other["model"], "m");
    let err = Settings::parse(
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}"#,
        "f.json",
    )
    .expect_err("a command hook without a command");
    assert!(err.to_string().contains("hooks.Stop"), "{err}");
}

#[test]
fn layers_merge_with_claude_code_precedence() {
    let home = tempfile::tempdir().expect("home");
    let ws = tempfile::tempdir().expect("ws");
    write(
        &home.path().join(".claude/settings.json"),
        r#"{"model": "user-model", "permissions": {"deny": ["Bash(curl:*)"]}, "env": {"A": "user", "B": "user"}}"#,
    );
    write(
        &ws.path().join(".claude/settings.json"),
        r#"{"model": "claude-project", "permissions": {"allow": ["Edit"], "deny": ["Bash(rm:*)"]}}"#,
    );
    write(
        &ws.path().join(".troupe/settings.json"),
        r#"{"model": "troupe-project", "env": {"B": "project"}}"#,
    );
    write(
        &ws.path().join(".troupe/settings.local.json"),
        r#"{"permissions": {"defaultMode": "plan", "deny": ["Bash(rm:*)"]}}"#,
    );
    let loaded = load(
        ws.path(),
        Some(home.path()),
        Some(r#"{"teammate_mode": "process"}"#),
    )
    .expect("loads");
    let s = &loaded.settings;
    assert_eq!(
        s.model.as_deref(),
        Some("troupe-project"),
        "project beats user; troupe's file beats Claude's"
    );
    assert_eq!(
        s.permissions.deny,
        ["Bash(curl:*)", "Bash(rm:*)"],
        "rules accumulate, once each"
    );
    assert_eq!(s.permissions.allow, ["Edit"]);
    assert_eq!(s.permissions.default_mode.as_deref(), Some("plan"));
    assert_eq!(s.env["A"], "user");
    assert_eq!(s.env["B"], "project");
    assert_eq!(s.teammate_mode.as_deref(), Some("process"));
    let scopes: Vec<Scope> = loaded.layers.iter().map(|l| l.scope).collect();
    assert_eq!(
        scopes,
        [
            Scope::User,
            Scope::Project,
            Scope::Project,
            Scope::Local,
            Scope::CommandLine
        ]
    );
    assert_eq!(loaded.layers[4].origin, "--settings");
}

#[test]
fn a_missing_settings_argument_file_is_an_error() {
    let ws = tempfile::tempdir().expect("ws");
    let err = load(ws.path(), None, Some("/nonexistent/settings.json")).expect_err("missing");
    assert!(
        err.to_string().contains("/nonexistent/settings.json"),
        "{err}"
    );
}

#[test]
fn no_files_gives_defaults() {
    let ws = tempfile::tempdir().expect("ws");
    let loaded = load(ws.path(), None, None).expect("loads");
    assert_eq!(loaded.settings, Settings::default());
    assert!(loaded.layers.is_empty());
}

#[test]
fn a_hook_matcher_that_is_not_a_regex_names_the_file_and_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(".claude/settings.json");
    write(
        &path,
        "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash(\", \"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}\n    ]\n  }\n}\n",
    );
    let err = load(dir.path(), None, None).expect_err("bad matcher");
    let text = err.to_string();
    assert!(text.contains(".claude/settings.json, line 4"), "{text}");
    assert!(text.contains("hooks.PreToolUse[0].matcher"), "{text}");
    assert!(text.contains("unclosed group"), "{text}");
    let err = Settings::parse(
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}"#,
        "f.json",
    )
    .expect_err("zero timeout");
    assert!(err.to_string().contains("at least 1"), "{err}");
    for everything in ["*", "", "mcp__.*", "Edit|Write"] {
        let text = format!(
            r#"{{"hooks": {{"PostToolUse": [{{"matcher": "{everything}", "hooks": [{{"type": "command", "command": "x"}}]}}]}}}}"#
        );
        Settings::parse(&text, "f.json").unwrap_or_else(|e| panic!("{everything}: {e}"));
    }
}

#[test]
fn hooks_of_every_layer_run_concatenated() {
    let home = tempfile::tempdir().expect("home");
    let ws = tempfile::tempdir().expect("ws");
    let hook = |command: &str| {
        format!(
            r#"{{"hooks": {{"PreToolUse": [{{"matcher": "Bash", "hooks": [{{"type": "command", "command": "{command}"}}]}}]}}}}"#
        )
    };
    write(&home.path().join(".claude/settings.json"), &hook("user"));
    write(&ws.path().join(".claude/settings.json"), &hook("project"));
    write(
        &ws.path().join(".claude/settings.local.json"),
        &hook("local"),
    );
    let loaded = load(ws.path(), Some(home.path()), None).expect("loads");
    let commands: Vec<&str> = loaded.settings.hooks["PreToolUse"]
        .iter()
        .flat_map(|m| &m.hooks)
        .map(|h| h.command.as_str())
        .collect();
    assert_eq!(commands, ["user", "project", "local"]);
}

#[test]
fn mcp_timeouts_are_seconds_merged_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".troupe/settings.json"),
        r#"{"mcp_tool_timeout": 90, "mcp_startup_timeout": 5}"#,
    );
    write(
        &dir.path().join(".troupe/settings.local.json"),
        r#"{"mcp_tool_timeout": 0.5}"#,
    );
    let loaded = troupe_settings::load(dir.path(), None, None).unwrap();
    assert_eq!(loaded.settings.mcp_tool_timeout, Some(0.5));
    assert_eq!(loaded.settings.mcp_startup_timeout, Some(5.0));
    for bad in ["0", "-1", "1e9"] {
        let err = Settings::parse(&format!(r#"{{"mcp_tool_timeout": {bad}}}"#), "f.json")
            .expect_err("out of range");
        assert!(err.to_string().contains("mcp_tool_timeout"), "{err}");
    }
}

#[test]
fn the_context_window_is_merged_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".troupe/settings.json"),
        r#"{"contextWindow": 32768}"#,
    );
    let loaded = troupe_settings::load(dir.path(), None, None).unwrap();
    assert_eq!(loaded.settings.context_window, Some(32_768));
    write(
        &dir.path().join(".troupe/settings.local.json"),
        r#"{"context_window": 65536}"#,
    );
    let loaded = troupe_settings::load(dir.path(), None, None).unwrap();
    assert_eq!(loaded.settings.context_window, Some(65_536));
    let err = Settings::parse(r#"{"contextWindow": 100}"#, "f.json").expect_err("too small");
    assert!(err.to_string().contains("contextWindow"), "{err}");
    let err = Settings::parse(r#"{"contextWindow": "big"}"#, "f.json").expect_err("not a number");
    assert!(err.to_string().contains("f.json"), "{err}");
}

#[test]
fn the_model_call_bound_is_merged_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".troupe/settings.json"),
        r#"{"max_concurrent_model_calls": 4}"#,
    );
    let loaded = troupe_settings::load(dir.path(), None, None).unwrap();
    assert_eq!(loaded.settings.max_concurrent_model_calls, Some(4));
    write(
        &dir.path().join(".troupe/settings.local.json"),
        r#"{"max_concurrent_model_calls": 32}"#,
    );
    let loaded = troupe_settings::load(dir.path(), None, None).unwrap();
    assert_eq!(loaded.settings.max_concurrent_model_calls, Some(32));
    let err =
        Settings::parse(r#"{"max_concurrent_model_calls": 0}"#, "f.json").expect_err("zero calls");
    assert!(
        err.to_string().contains("max_concurrent_model_calls"),
        "{err}"
    );
    let err =
        Settings::parse(r#"{"max_concurrent_model_calls": -2}"#, "f.json").expect_err("negative");
    assert!(err.to_string().contains("f.json"), "{err}");
}
