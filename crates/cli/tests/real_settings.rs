//! A Claude Code project's settings as real projects write them (fixtures/real_settings), through
//! the binary: `-p` runs and exits 0, every key troupe does not honour is one warning on stderr
//! however many files set it, the REPL says the same before its first prompt, `troupe doctor`
//! lists them on its configuration line, and what troupe honours takes effect.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

const FIXTURE: &str = include_str!("fixtures/real_settings/settings.json");

/// The warnings the fixture gets, each a piece of its one line.
const WARNINGS: [&str; 7] = [
    "settings `includeCoAuthoredBy` is not honoured yet",
    "extraKnownMarketplaces.example-plugins: a github source cannot be fetched by troupe",
    "settings `spinnerTipsEnabled` is ignored",
    "settings `sandbox.autoAllowBashIfSandboxed` is not honoured yet",
    "permission rule `Bash(git -C :* status:*)`",
    "the allow rule `mcp__github__get_me` names the MCP server `github`, which is not configured",
    "settings outputStyle: output style 'Terse' is not defined",
];

/// A workspace holding the fixture as its project and its local settings, trusted.
fn project() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write(".claude/settings.json", FIXTURE);
    ws.write(".claude/settings.local.json", FIXTURE);
    let trusted = run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws.path())
        .env("HOME", ws.path().join(".home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("TROUPE_WORKSPACE_TRUST")
        .args(["trust", "--yes"]));
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    ws
}

fn each_once(text: &str) {
    for warning in WARNINGS {
        assert_eq!(text.matches(warning).count(), 1, "{warning}\n{text}");
    }
}

#[test]
fn a_real_claude_code_project_runs_headless_with_one_warning_per_unhonoured_key() {
    let ws = project();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "ls"})),
            Step::text("listed"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "list the files"]));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "listed");
    each_once(&err);
    let requests = server.requests_for("lead");
    let body = &requests[0].body;
    // alwaysThinkingEnabled: thinking on; this model takes a budget, which the API wants
    // above CLAUDE_CODE_MAX_OUTPUT_TOKENS' 4096.
    let budget = body["thinking"]["budget_tokens"]
        .as_u64()
        .expect("thinking is on");
    assert_eq!(body["max_tokens"].as_u64(), Some(4096 + budget));
    // dontAsk: `ls` is allowed by a rule and runs.
    let (text, is_error) = requests[1].last_tool_result().unwrap();
    assert!(!is_error, "{text}");
}

#[test]
fn the_repl_says_the_same_warnings_before_its_first_prompt() {
    let ws = project();
    let server = FakeServer::start();
    let out = common::repl(ws.path(), &server, &[], "/exit\n");
    assert!(out.status.success(), "{}", stderr(&out));
    each_once(&stderr(&out));
}

fn doctor(ws: &Path, server: &FakeServer) -> Value {
    let out = run(troupe(ws, server, Wire::Anthropic).args(["doctor", "--json"]));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    let checks = report["checks"].as_array().unwrap();
    checks.iter().find(|c| c["check"] == name).unwrap()
}

#[test]
fn doctor_lists_the_warnings_on_its_configuration_line_and_a_broken_file_once() {
    let ws = project();
    let server = FakeServer::start();
    let report = doctor(ws.path(), &server);
    let configuration = check(&report, "configuration");
    assert_eq!(configuration["ok"], true, "{configuration}");
    let warnings = configuration["warnings"].to_string();
    // The MCP rule, the output style and the marketplaces are checked when a run starts; the
    // rest are here.
    for warning in WARNINGS.iter().filter(|w| {
        !w.contains("mcp__") && !w.contains("outputStyle") && !w.contains("Marketplaces")
    }) {
        assert_eq!(
            warnings.matches(warning).count(),
            1,
            "{warning}\n{warnings}"
        );
    }
    ws.write(
        ".claude/settings.local.json",
        "{\"permisions\": {\"allow\": [\"Bash\",]}}",
    );
    let report = doctor(ws.path(), &server);
    let text = report.to_string();
    assert_eq!(
        text.matches("settings.local.json, line 1").count(),
        1,
        "{text}"
    );
    assert_eq!(check(&report, "configuration")["ok"], false);
}

#[test]
fn a_misspelled_key_names_the_file_and_the_key_it_was_meant_to_be() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        r#"{"permisions": {"allow": ["Bash"]}}"#,
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("ok")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(
        &out,
        ".claude/settings.json: unknown settings key `permisions` (did you mean `permissions`?); ignored",
    );
}

#[test]
fn bypass_is_refused_when_the_settings_disable_it() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"disableBypassPermissionsMode": "disable", "defaultMode": "bypassPermissions"}}"#,
    );
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "touch it",
        "--dangerously-skip-permissions",
    ]));
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "bypassPermissions is disabled by the settings");
    assert!(server.journal().is_empty(), "no model call was made");
    // The settings' own defaultMode falls back to default, with a warning.
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "touch made"})),
            Step::text("tried"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "touch it"]));
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(&out, "troupe uses default");
    assert!(
        !ws.exists("made"),
        "default mode refuses the command headless"
    );
}
