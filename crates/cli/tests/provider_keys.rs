//! troupe's provider keys stay with troupe: a bash command, a hook and a stdio MCP server see an
//! environment without `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `OPENAI_API_KEY`; a
//! variable the user's `commandEnv.passthrough` names arrives, and so does one an `.mcp.json`
//! entry sets in its own `env`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// The secrets troupe runs with; `test-key` is the Anthropic key the helpers set.
const SECRETS: &[(&str, &str)] = &[
    ("ANTHROPIC_AUTH_TOKEN", "secret-auth-token"),
    ("OPENAI_API_KEY", "secret-openai-key"),
    ("OPENAI_ORG_ADMIN_API_KEY", "secret-admin-key"),
];

/// A stdio MCP server with one tool, `env`, that answers with its environment.
const ENV_SERVER: &str = r#"
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "envdump", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "env", "description": "its environment",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        text = "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

fn run_with_secrets(ws: &TempWorkspace, server: &FakeServer, extra: &[&str]) {
    let mut cmd = troupe(ws.path(), server, Wire::Anthropic);
    cmd.args([
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ])
    .args(extra);
    for (key, value) in SECRETS {
        cmd.env(key, value);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "done");
}

/// Asserts that `text` holds none of troupe's keys.
#[track_caller]
fn keyless(text: &str, what: &str) {
    assert!(!text.contains("test-key"), "{what} saw ANTHROPIC_API_KEY");
    for (key, value) in SECRETS {
        assert!(!text.contains(value), "{what} saw {key}");
    }
}

#[test]
fn commands_hooks_and_mcp_servers_get_no_provider_key() {
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let hook_env = outside.path().join("hook-env.txt");
    ws.write(
        ".claude/settings.json",
        serde_json::to_string(
            &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": format!("env > '{}'", hook_env.display())}
            ]}]}}),
        )
        .unwrap(),
    );
    ws.write("envdump.py", ENV_SERVER);
    ws.write(
        ".mcp.json",
        serde_json::to_string(&json!({"mcpServers": {"envdump": {
            "command": "python3",
            "args": [ws.join("envdump.py")],
            "env": {"GIVEN_KEY": "${OPENAI_API_KEY}"},
        }}}))
        .unwrap(),
    );
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "env; echo END"})),
        // Waits for the server's start-up, so the next round has its tool.
        Step::tool("connect_mcp", json!({"name": "envdump"})),
        Step::tool("mcp__envdump__env", json!({})),
        Step::text("done"),
    ]);
    run_with_secrets(&ws, &server, &[]);
    let lead = server.requests_for("lead");
    let (bash, is_error) = lead[1].last_tool_result().unwrap();
    assert!(
        !is_error && bash.contains("END") && bash.contains("PATH="),
        "{bash}"
    );
    keyless(&bash, "bash");
    let hook = std::fs::read_to_string(&hook_env).unwrap();
    assert!(hook.contains("CLAUDE_PROJECT_DIR="), "{hook}");
    keyless(&hook, "the hook");
    let (mcp, is_error) = lead[3].last_tool_result().unwrap();
    assert!(!is_error && mcp.contains("PATH="), "{mcp}");
    // What the entry named itself reaches its server; nothing else does.
    assert!(mcp.contains("GIVEN_KEY=secret-openai-key"), "{mcp}");
    keyless(
        &mcp.replace("GIVEN_KEY=secret-openai-key", ""),
        "the MCP server",
    );
}

#[test]
fn a_passthrough_setting_lets_a_named_key_through_and_only_it() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "env"})),
        Step::text("done"),
    ]);
    let settings = r#"{"commandEnv": {"passthrough": ["OPENAI_API_KEY"]}}"#;
    run_with_secrets(&ws, &server, &["--settings", settings]);
    let (bash, _) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(bash.contains("OPENAI_API_KEY=secret-openai-key"), "{bash}");
    assert!(
        !bash.contains("test-key") && !bash.contains("secret-auth-token"),
        "{bash}"
    );

    // A project cannot ask for the keys.
    ws.write(".claude/settings.json", settings);
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "env"})),
        Step::text("done"),
    ]);
    run_with_secrets(&ws, &server, &[]);
    let (bash, _) = server.requests_for("lead")[1].last_tool_result().unwrap();
    keyless(&bash, "bash under a project's passthrough");
}
