//! `troupe mcp add|add-json|get|remove` edit the files `claude mcp` edits — `.mcp.json` for
//! the project scope, `~/.claude.json` for the user scope (top-level `mcpServers`) and the
//! local scope (`projects["<workspace>"].mcpServers`) — keeping every other key; `mcp list`
//! and a run read all three.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// `troupe ARGS…` in `ws` with its own home (`ws/.home`), as from another terminal.
fn troupe_at(ws: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(ws.join(".home")).unwrap();
    run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws)
        .env("HOME", ws.join(".home"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .args(args))
}

/// A stdio MCP server with one tool, `ping`, in the fewest lines of Python.
const TINY_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "ping", "description": "pong", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn each_scope_is_written_where_claude_code_writes_it_and_other_keys_stay() {
    let ws = TempWorkspace::new();
    let home = ws.join(".home/.claude.json");
    ws.write(
        ".home/.claude.json",
        r#"{"numStartups": 4, "projects": {"/elsewhere": {"hasTrustDialogAccepted": true}}}"#,
    );
    ws.write(".mcp.json", r#"{"mcpServers": {}, "note": "kept"}"#);
    let ok = |out: Output| {
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = ok(troupe_at(
        ws.path(),
        &[
            "mcp", "add", "-e", "K=v", "tool", "--", "node", "srv.js", "--port", "3",
        ],
    ));
    common::assert_contains(&said, "Added stdio MCP server tool to local config");
    ok(troupe_at(
        ws.path(),
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "--scope",
            "project",
            "web",
            "https://example.com/mcp",
            "-H",
            "Authorization: Bearer t",
        ],
    ));
    ok(troupe_at(
        ws.path(),
        &[
            "mcp",
            "add-json",
            "-s",
            "user",
            "everywhere",
            r#"{"type":"stdio","command":"echo","args":["x"]}"#,
        ],
    ));

    let doc = json_file(&home);
    assert_eq!(doc["numStartups"], 4);
    assert_eq!(
        doc["projects"]["/elsewhere"]["hasTrustDialogAccepted"],
        true
    );
    let key = ws.path().canonicalize().unwrap().display().to_string();
    assert_eq!(
        doc["projects"][key.as_str()]["mcpServers"]["tool"],
        json!({"type": "stdio", "command": "node", "args": ["srv.js", "--port", "3"], "env": {"K": "v"}})
    );
    assert_eq!(doc["mcpServers"]["everywhere"]["command"], "echo");
    let project = json_file(&ws.join(".mcp.json"));
    assert_eq!(project["note"], "kept");
    assert_eq!(
        project["mcpServers"]["web"],
        json!({"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}})
    );

    // A name taken in its scope is refused; another scope may have it.
    let again = troupe_at(ws.path(), &["mcp", "add", "tool", "node"]);
    assert_eq!(again.status.code(), Some(1));
    common::assert_contains(&stderr(&again), "already exists in local config");
    ok(troupe_at(
        ws.path(),
        &["mcp", "add", "-s", "project", "tool", "other"],
    ));

    // get shows the entry that wins (local over project) and its scope.
    let got: Value =
        serde_json::from_str(&ok(troupe_at(ws.path(), &["mcp", "get", "tool", "--json"]))).unwrap();
    assert_eq!(got["scope"], "local");
    assert_eq!(got["server"]["command"], "node");
    let text = ok(troupe_at(ws.path(), &["mcp", "get", "web"]));
    common::assert_contains(&text, "Scope: Project config");
    common::assert_contains(&text, "URL: https://example.com/mcp");
    let missing = troupe_at(ws.path(), &["mcp", "get", "nope"]);
    assert_eq!(missing.status.code(), Some(1));

    // remove: ambiguous without --scope, then one scope at a time.
    let both = troupe_at(ws.path(), &["mcp", "remove", "tool"]);
    assert_eq!(both.status.code(), Some(1));
    common::assert_contains(&stderr(&both), "exists in multiple scopes: local, project");
    ok(troupe_at(
        ws.path(),
        &["mcp", "remove", "tool", "-s", "local"],
    ));
    ok(troupe_at(ws.path(), &["mcp", "remove", "tool"]));
    let doc = json_file(&home);
    assert_eq!(doc["projects"][key.as_str()]["mcpServers"], json!({}));
    assert_eq!(doc["numStartups"], 4);
    assert!(json_file(&ws.join(".mcp.json"))["mcpServers"]
        .get("tool")
        .is_none());
    let gone = troupe_at(ws.path(), &["mcp", "remove", "tool"]);
    assert_eq!(gone.status.code(), Some(1));
}

#[test]
fn list_and_a_run_use_the_servers_of_claude_json() {
    let ws = TempWorkspace::new();
    let script = ws.write("tiny_mcp.py", TINY_SERVER);
    let fixture = json!({"command": "python3", "args": [script]}).to_string();
    let out = troupe_at(ws.path(), &["mcp", "add-json", "fx", &fixture]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = troupe_at(
        ws.path(),
        &[
            "mcp",
            "add-json",
            "-s",
            "user",
            "mine",
            r#"{"command":"/nonexistent/server"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let out = troupe_at(ws.path(), &["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = listed["servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();
    let fx = by_name("fx");
    assert_eq!(fx["status"], "connected", "{fx}");
    common::assert_contains(fx["origin"].as_str().unwrap(), ".claude.json (local scope)");
    let mine = by_name("mine");
    common::assert_contains(
        mine["origin"].as_str().unwrap(),
        ".claude.json (user scope)",
    );

    // The lead of a run gets the local server's tools.
    let server = FakeServer::start();
    server.script("lead", [Step::text("fine")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["subtype"], "success");
    let request = &server.requests_for("lead")[0];
    assert!(
        request.tool_names().iter().any(|t| t == "mcp__fx__ping"),
        "{:?}",
        request.tool_names()
    );
}
