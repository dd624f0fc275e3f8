//! Claude Code's settings as real projects write them: every key and value its schema accepts
//! loads, what troupe does not honour is a warning from one table, a key nobody knows is a
//! warning naming the file and the nearest key.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use troupe_settings::claude_keys::{schema, unhonoured, HONOURED, TROUPE_KEYS, UNHONOURED};
use troupe_settings::{SandboxMode, SandboxNetwork, Settings, Warning};

fn texts(warnings: &[Warning]) -> Vec<String> {
    warnings.iter().map(|w| w.text.clone()).collect()
}

#[test]
fn every_key_of_claude_codes_schema_is_honoured_or_listed_with_its_warning() {
    let schema = schema();
    let nested = [
        ("permissions", &schema.permissions),
        ("sandbox", &schema.sandbox),
    ];
    let dotted = nested
        .iter()
        .flat_map(|(parent, keys)| keys.iter().map(move |k| format!("{parent}.{k}")));
    let mut missing = Vec::new();
    for key in schema.keys.iter().cloned().chain(dotted) {
        let honoured = HONOURED.iter().any(|(k, _)| *k == key);
        match (honoured, unhonoured(&key)) {
            (true, Some(_)) => panic!("`{key}` is both honoured and listed as not honoured"),
            (false, None) => missing.push(key),
            (true, None) => {}
            (false, Some(entry)) => {
                let warning = entry.warning();
                assert!(warning.contains(&format!("`{key}`")), "{warning}");
                assert!(
                    warning.contains("ignored") || warning.contains("not honoured yet"),
                    "{warning}"
                );
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys of Claude Code's schema neither honoured nor in claude_keys::UNHONOURED: {missing:?}"
    );
    for entry in UNHONOURED {
        let (parent, leaf) = entry.key.split_once('.').unwrap_or(("", entry.key));
        let keys = match parent {
            "" => &schema.keys,
            "sandbox" => &schema.sandbox,
            "permissions" => &schema.permissions,
            other => panic!("no such section {other}"),
        };
        assert!(
            keys.iter().any(|k| k == leaf),
            "`{}` is not in the schema",
            entry.key
        );
    }
    assert!(schema.hooks.iter().any(|e| e == "PreToolUse"));
    assert_eq!(schema.hook_types[0], "command");
    for key in TROUPE_KEYS {
        assert!(
            !schema.keys.iter().any(|k| k == key),
            "{key} is Claude Code's too"
        );
    }
}

#[test]
fn a_real_claude_code_settings_file_loads_with_one_warning_per_unhonoured_key() {
    let (settings, warnings) = Settings::parse_checked(
        r#"{
          "$schema": "https://json.schemastore.org/claude-code-settings.json",
          "env": {"MAX_MCP_OUTPUT_TOKENS": 40000, "DISABLE_TELEMETRY": true, "GONE": null},
          "includeCoAuthoredBy": false,
          "permissions": {"allow": ["Bash(git -C :* status:*)", "mcp__github__get_me"],
                          "defaultMode": "dontAsk", "disableBypassPermissionsMode": "disable"},
          "statusLine": {"type": "command", "command": "npx ccusage", "padding": 0},
          "spinnerTipsEnabled": false,
          "alwaysThinkingEnabled": true,
          "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [
              {"type": "http", "url": "http://localhost:9/h", "timeout": 2.5},
              {"type": "command", "command": "true", "if": "Edit(src/**)", "async": true}]}]},
          "sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true,
                      "excludedCommands": ["docker"],
                      "network": {"allowUnixSockets": ["/var/run/docker.sock"], "allowLocalBinding": true, "httpProxyPort": 8080}}
        }"#,
        ".claude/settings.json",
    )
    .expect("loads");
    assert_eq!(settings.env["MAX_MCP_OUTPUT_TOKENS"], "40000");
    assert_eq!(settings.env["DISABLE_TELEMETRY"], "true");
    assert!(!settings.env.contains_key("GONE"));
    assert_eq!(
        settings.permissions.default_mode.as_deref(),
        Some("dontAsk")
    );
    assert!(settings.permissions.bypass_disabled());
    let hooks = &settings.hooks["PostToolUse"][0].hooks;
    assert_eq!(
        hooks[0].timeout,
        Some(3),
        "a fractional timeout is rounded up"
    );
    assert_eq!(hooks[1].condition.as_deref(), Some("Edit(src/**)"));
    let sandbox = settings.sandbox.expect("sandbox");
    assert_eq!(sandbox.mode, SandboxMode::Auto);
    // Claude Code's object names unix sockets to allow: every socket kind is allowed.
    assert_eq!(sandbox.network, SandboxNetwork::Allow);
    assert!(!sandbox.excluded_commands.is_empty());
    let texts = texts(&warnings);
    let expected = [
        "settings `includeCoAuthoredBy` is not honoured yet: troupe adds no co-author line to commits",
        "settings `spinnerTipsEnabled` is ignored: troupe's terminal has no such option",
        "settings `sandbox.autoAllowBashIfSandboxed` is not honoured yet: sandboxed commands still follow the permission rules",
    ];
    for line in expected {
        assert!(texts.iter().any(|t| t == line), "{line}\n{texts:#?}");
    }
    assert_eq!(texts.len(), expected.len(), "{texts:#?}");
}

#[test]
fn claudes_sandbox_object_turns_the_sandbox_off_with_enabled_false() {
    let off = Settings::parse(r#"{"sandbox": {"enabled": false}}"#, "t").expect("parses");
    assert_eq!(off.sandbox.expect("set").mode, SandboxMode::Off);
    let err = Settings::parse(r#"{"sandbox": {"enabled": "no"}}"#, "t").expect_err("not a bool");
    assert!(err.to_string().contains("sandbox.enabled"), "{err}");
}

#[test]
fn an_unknown_key_names_the_file_and_the_nearest_key() {
    let (_, warnings) = Settings::parse_checked(
        r#"{"permisions": {"allow": ["Bash"]}, "permissions": {"alow": []}, "sandbox": {"excludedCommand": []}, "zzzzzzzz": 1, "teammate_mdoe": "process"}"#,
        "/w/.claude/settings.local.json",
    )
    .expect("loads");
    assert_eq!(
        texts(&warnings),
        [
            "/w/.claude/settings.local.json: unknown settings key `permisions` (did you mean `permissions`?); ignored",
            "/w/.claude/settings.local.json: unknown settings key `permissions.alow` (did you mean `allow`?); ignored",
            "/w/.claude/settings.local.json: unknown settings key `sandbox.excludedCommand` (did you mean `excludedCommands`?); ignored",
            "/w/.claude/settings.local.json: unknown settings key `zzzzzzzz`; ignored",
            "/w/.claude/settings.local.json: unknown settings key `teammate_mdoe` (did you mean `teammate_mode`?); ignored",
        ]
    );
    assert!(warnings.iter().all(|w| w.origin.is_some()));
}

#[test]
fn a_mode_claude_code_has_and_troupe_lacks_says_so() {
    let (settings, warnings) =
        Settings::parse_checked(r#"{"permissions": {"defaultMode": "delegate"}}"#, "f")
            .expect("loads");
    assert_eq!(settings.permissions.default_mode, None);
    assert_eq!(
        texts(&warnings),
        ["f: `permissions.defaultMode` `delegate` is not honoured yet: troupe has no such mode and uses `default`"]
    );
    for mode in ["auto", "dontAsk"] {
        let text = format!(r#"{{"permissions": {{"defaultMode": "{mode}"}}}}"#);
        let (settings, warnings) = Settings::parse_checked(&text, "f").expect("loads");
        assert_eq!(settings.permissions.default_mode.as_deref(), Some(mode));
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
