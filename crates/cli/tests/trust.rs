//! Workspace trust through the binary: a freshly cloned folder with a SessionStart hook and a
//! `.mcp.json` server is asked about in the REPL (naming both) before either runs; "no" runs
//! neither and the session still answers; "yes" runs them and is remembered until a hook
//! changes; `-p` runs them as Claude Code's does unless trust is required, when it refuses
//! with exit code 3 naming them; a torn trust file is a warning and never trust; teammates, in
//! process and in-process, follow the lead; "untrusted" drops hooks and loosening settings.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use common::{run, stderr, troupe};
use pty_support::Pty;
use repl_support::{leave, prompt_row, LIMIT};
use std::path::Path;
use std::process::Command;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

const QUESTION: &str = "Do you trust the files in this folder?";

/// A folder as a hostile clone would have it: a SessionStart hook and an MCP stdio server, each
/// leaving a marker file when it runs.
fn cloned_folder(hook: &str) -> TempWorkspace {
    let ws = TempWorkspace::new();
    let entry = serde_json::json!([{"hooks": [{"type": "command", "command": hook}]}]);
    ws.write(
        ".claude/settings.json",
        serde_json::json!({"hooks": {"SessionStart": entry}}).to_string(),
    );
    ws.write(
        ".mcp.json",
        r#"{"mcpServers": {"probe": {"command": "sh", "args": ["-c", "touch mcp-ran"]}}}"#,
    );
    ws
}

/// The REPL in a pty, not waiting for anything.
fn start_repl(ws: &Path, server: &FakeServer) -> Pty {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    cmd.env("TERM", "xterm-256color").env_remove("TROUPE_LOG");
    Pty::spawn(cmd, 40, 160)
}

/// Waits for the REPL's prompt after its banner.
fn wait_ready(pty: &Pty) -> String {
    pty.wait_for_text("/help for commands", LIMIT);
    pty.wait_for("the prompt", LIMIT, |s| prompt_row(s).is_some())
}

/// Sends a prompt and waits for the model's answer on screen.
fn ask_model(pty: &mut Pty, prompt: &str, answer: &str) {
    pty.send(&format!("{prompt}\r"));
    pty.wait_for_text(answer, LIMIT);
}

/// Waits (bounded) for a file a background process creates.
fn wait_file(path: &Path) {
    let what = format!("{} to appear", path.display());
    troupe_testkit::wait_until(&what, LIMIT, || path.exists());
}

/// `troupe trust …` with the workspace's HOME.
fn trust_cmd(ws: &Path, args: &[&str]) -> std::process::Output {
    run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws)
        .env("HOME", ws.join(".home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("TROUPE_WORKSPACE_TRUST")
        .arg("trust")
        .args(args))
}

#[test]
fn the_repl_asks_naming_hook_and_server_and_no_runs_neither_but_still_answers() {
    let ws = cloned_folder("touch hook-ran");
    let server = common::lead_server([
        Step::text("still here"),
        Step::text("again"),
        Step::text("headless"),
    ]);
    let mut pty = start_repl(ws.path(), &server);
    let screen = pty.wait_for_text("[y/N]", LIMIT);
    assert!(screen.contains(QUESTION), "{screen}");
    common::assert_contains(&screen, "SessionStart hook: touch hook-ran");
    common::assert_contains(&screen, "MCP server `probe`: sh -c touch mcp-ran");
    assert!(
        !ws.join("mcp-ran").exists(),
        "the server started before the answer"
    );
    pty.send("n\r");
    wait_ready(&pty);
    ask_model(&mut pty, "hello", "still here");
    pty.send("/mcp\r");
    pty.wait_for_text("No MCP servers are configured", LIMIT);
    leave(pty);
    assert!(!ws.join("hook-ran").exists(), "the hook ran after a no");
    assert!(!ws.join("mcp-ran").exists(), "the server ran after a no");

    // The answer is remembered: the next start does not ask, and says why nothing runs.
    let mut pty = start_repl(ws.path(), &server);
    let screen = wait_ready(&pty);
    assert!(!screen.contains(QUESTION), "{screen}");
    assert!(screen.contains("this folder is not trusted"), "{screen}");
    ask_model(&mut pty, "hello again", "again");
    leave(pty);
    assert!(!ws.join("hook-ran").exists());

    // A remembered no holds for scripts too, and refuses them when trust is required.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!ws.join("hook-ran").exists(), "-p ran a folder answered no");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    common::assert_stderr_has(&out, "the answer was no");
}

#[test]
fn yes_runs_them_is_remembered_and_a_changed_hook_is_asked_again() {
    let ws = cloned_folder("touch hook-ran");
    let server = common::lead_server([Step::text("one"), Step::text("two"), Step::text("three")]);
    let mut pty = start_repl(ws.path(), &server);
    pty.wait_for_text("[y/N]", LIMIT);
    pty.send("y\r");
    wait_ready(&pty);
    wait_file(&ws.join("mcp-ran"));
    ask_model(&mut pty, "hello", "one");
    leave(pty);
    assert!(ws.join("hook-ran").exists(), "the trusted hook did not run");
    let trust = std::fs::read_to_string(ws.join(".home/.config/troupe/trust.json")).unwrap();
    assert!(trust.contains("\"trusted\": true"), "{trust}");

    // Trusted and unchanged: not asked, and the hook runs again.
    std::fs::remove_file(ws.join("hook-ran")).unwrap();
    let mut pty = start_repl(ws.path(), &server);
    let screen = wait_ready(&pty);
    assert!(!screen.contains(QUESTION), "{screen}");
    ask_model(&mut pty, "hello", "two");
    leave(pty);
    assert!(ws.join("hook-ran").exists());

    // A pull that changes the hook is a new question.
    let entry = serde_json::json!([{"hooks": [{"type": "command", "command": "touch other-ran"}]}]);
    ws.write(
        ".claude/settings.json",
        serde_json::json!({"hooks": {"SessionStart": entry}}).to_string(),
    );
    let mut pty = start_repl(ws.path(), &server);
    let screen = pty.wait_for_text("[y/N]", LIMIT);
    common::assert_contains(&screen, "changed since you last answered");
    assert!(screen.contains("touch other-ran"), "{screen}");
    pty.send("n\r");
    wait_ready(&pty);
    ask_model(&mut pty, "hello", "three");
    leave(pty);
    assert!(
        !ws.join("other-ran").exists(),
        "the changed hook ran after a no"
    );
}

#[test]
fn headless_runs_the_folder_unless_trust_is_required_then_refuses_with_exit_3() {
    let ws = cloned_folder("touch hook-ran");
    let server = FakeServer::start();
    server.script("lead", [Step::text("ran"), Step::text("trusted now")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(ws.join("hook-ran").exists(), "-p runs the folder's hooks");

    let ws = cloned_folder("touch hook-ran");
    // A project cannot turn the requirement off.
    ws.write(".troupe/settings.json", r#"{"requireTrust": false}"#);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("not trusted"), "{err}");
    assert!(err.contains("SessionStart hook: touch hook-ran"), "{err}");
    common::assert_contains(&err, "MCP server `probe`: sh -c touch mcp-ran");
    assert!(!ws.join("hook-ran").exists() && !ws.join("mcp-ran").exists());
    assert_eq!(server.requests_for("lead").len(), 1, "no model call");

    // The user's own setting requires it as well.
    ws.write(".home/.troupe/settings.json", r#"{"requireTrust": true}"#);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));

    // A script trusts the folder explicitly, then runs it.
    let shown = trust_cmd(ws.path(), &[]);
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(
        text.contains("never answered") && text.contains("touch hook-ran"),
        "{text}"
    );
    assert!(trust_cmd(ws.path(), &["--yes"]).status.success());
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(ws.join("hook-ran").exists());
    let shown = trust_cmd(ws.path(), &[]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains(": trusted"));
    assert!(trust_cmd(ws.path(), &["--revoke"]).status.success());
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
}

#[test]
fn a_torn_trust_file_is_a_warning_and_never_trust() {
    let ws = cloned_folder("touch hook-ran");
    let server = FakeServer::start();
    server.script("lead", [Step::text("answered")]);
    assert!(trust_cmd(ws.path(), &["--yes"]).status.success());
    let file = ws.join(".home/.config/troupe/trust.json");
    let whole = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning") && err.contains("malformed"),
        "{err}"
    );
    assert!(!ws.join("hook-ran").exists());

    // The REPL asks, and does not overwrite the torn file with the answer.
    let mut pty = start_repl(ws.path(), &server);
    let screen = pty.wait_for_text("[y/N]", LIMIT);
    assert!(screen.contains("malformed"), "{screen}");
    pty.send("n\r");
    wait_ready(&pty);
    ask_model(&mut pty, "hello", "answered");
    leave(pty);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        whole[..whole.len() / 2]
    );
}

#[test]
fn an_untrusted_lead_decision_drops_hooks_and_loosening_settings() {
    // The channel a lead uses to tell its teammate processes (and any troupe its commands
    // start) that the folder is not trusted.
    let ws = TempWorkspace::new();
    let entry = serde_json::json!([{"hooks": [{"type": "command", "command": "touch hook-ran"}]}]);
    ws.write(
        ".claude/settings.json",
        serde_json::json!({
            "hooks": {"SessionStart": entry},
            "permissions": {"defaultMode": "bypassPermissions", "allow": ["Bash"]},
        })
        .to_string(),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", serde_json::json!({"command": "touch written"})),
            Step::text("done"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_WORKSPACE_TRUST", "untrusted")
        .args(["-p", "write"]));
    let err = stderr(&out);
    assert!(err.contains("this folder is not trusted"), "{err}");
    assert!(!ws.join("hook-ran").exists(), "the hook ran");
    assert!(
        !ws.join("written").exists(),
        "bypassPermissions or the bare Bash allow applied"
    );
    let result = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(result.1, "the write was not refused: {result:?}");
}

/// A folder with a PreToolUse hook on Bash, and a model whose lead spawns bob, who runs `true`.
fn hook_and_teammate() -> (TempWorkspace, FakeServer) {
    let ws = TempWorkspace::new();
    let entry = serde_json::json!([{"matcher": "Bash", "hooks": [{"type": "command", "command": "touch pre-ran"}]}]);
    ws.write(
        ".claude/settings.json",
        serde_json::json!({"hooks": {"PreToolUse": entry}}).to_string(),
    );
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        serde_json::json!({"name": "bob", "role": "coder", "prompt": "run true"}),
    );
    server.script(
        "bob",
        [
            Step::tool("bash", serde_json::json!({"command": "true"})),
            Step::text("bob ran it"),
        ],
    );
    (ws, server)
}

/// `-p` as the lead with bob in `mode`.
fn lead_with_teammate(ws: &Path, server: &FakeServer, mode: &str, env: &[(&str, &str)]) {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(cmd.args([
        "-p",
        "x",
        "--permission-mode",
        "bypassPermissions",
        "--teammate-mode",
        mode,
    ]));
    assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
    assert!(
        server.requests_for("bob").len() >= 2,
        "{mode}: bob made his call"
    );
}

#[test]
fn teammates_in_either_mode_follow_the_leads_decision() {
    for mode in ["process", "in-process"] {
        let (ws, server) = hook_and_teammate();
        lead_with_teammate(
            ws.path(),
            &server,
            mode,
            &[("TROUPE_WORKSPACE_TRUST", "untrusted")],
        );
        assert!(
            !ws.join("pre-ran").exists(),
            "{mode}: the folder's hook ran for bob"
        );
    }
    // The lead running the folder's definitions: bob's call runs the hook.
    let (ws, server) = hook_and_teammate();
    lead_with_teammate(ws.path(), &server, "process", &[]);
    assert!(ws.join("pre-ran").exists(), "the hook did not run for bob");
}

/// A folder whose settings set what only trust may: a team store of its own, the model as the
/// answerer of teammates' questions, an allow rule for `.git/config`.
const OFF_THE_LIST: [(&str, &str); 3] = [
    (
        r#"{"store": "nats://127.0.0.1:9"}"#,
        "store: nats://127.0.0.1:9",
    ),
    (
        r#"{"teammate_permissions": "lead"}"#,
        "teammate_permissions: lead",
    ),
    (
        r#"{"permissions": {"allow": ["Edit(.git/config)"]}}"#,
        "permissions.allow: Edit(.git/config)",
    ),
];

#[test]
fn settings_off_the_allow_list_are_listed_and_refused_when_trust_is_required() {
    let server = FakeServer::start();
    for (settings, item) in OFF_THE_LIST {
        let ws = TempWorkspace::new();
        ws.write(".claude/settings.json", settings);
        let shown = trust_cmd(ws.path(), &[]);
        let text = String::from_utf8_lossy(&shown.stdout).to_string();
        common::assert_contains(&text, "never answered");
        common::assert_contains(&text, &format!("{item}   (.claude/settings.json)"));
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .env("TROUPE_REQUIRE_TRUST", "1")
            .args(["-p", "hi"]));
        assert_eq!(out.status.code(), Some(3), "{item}: {}", stderr(&out));
        common::assert_stderr_has(&out, item);
        assert!(
            server.requests_for("lead").is_empty(),
            "{item}: a model call"
        );
    }
}

#[test]
fn an_untrusted_folder_keeps_the_file_store_and_its_git_config_rule_grants_nothing() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        r#"{"store": "nats://127.0.0.1:9", "permissions": {"allow": ["Edit(.git/config)"]}}"#,
    );
    ws.write(".git/config", "[core]\n");
    let server = FakeServer::start();
    let write = || {
        Step::tool(
            "write_file",
            serde_json::json!({"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}),
        )
    };
    server.script("lead", [write(), Step::text("done")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_WORKSPACE_TRUST", "untrusted")
        .args(["-p", "write"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    common::assert_stderr_has(&out, "this folder is not trusted");
    assert!(
        ws.join(".troupe/teams/default").exists(),
        "the file store was not used"
    );
    let result = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(
        result.1,
        "the folder's own rule allowed the write: {result:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // `troupe team` reads the store the same way.
    let team = run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws.path())
        .env("HOME", ws.join(".home"))
        .env("TROUPE_WORKSPACE_TRUST", "untrusted")
        .env_remove("TROUPE_STORE")
        .args(["team", "status", "--team", "default"]));
    assert!(team.status.success(), "stderr: {}", stderr(&team));

    // Trusted, the folder's store is the one used (and cannot be reached here).
    assert!(trust_cmd(ws.path(), &["--yes"]).status.success());
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "write"]));
    assert!(!out.status.success(), "the folder's store was not used");
    common::assert_stderr_has(&out, "127.0.0.1:9");
}
