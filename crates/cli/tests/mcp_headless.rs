//! MCP servers in a headless run: one still starting when the run ends is "not started (run
//! ended)", never reported as failed; an HTTP server's error names the server and the cause,
//! never a Rust type.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{stderr, subcommand};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// An address nothing listens on.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/mcp")
}

#[test]
fn a_server_still_starting_when_the_run_ends_is_not_reported_failed() {
    let ws = TempWorkspace::new();
    // A "server" that never answers initialize: it is still starting when the run is over.
    ws.write(
        ".mcp.json",
        json!({"mcpServers": {"slow": {"command": "sleep", "args": ["30"]}}}).to_string(),
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("done at once")]);
    // The run waits for it before its first model call, at most MCP_TIMEOUT (here 300 ms),
    // then goes on without it; the server is still starting when the run ends.
    let out = common::run(
        common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic)
            .env("MCP_TIMEOUT", "300")
            .args(["-p", "hi", "--output-format", "json"])
            .args(["--permission-mode", "bypassPermissions"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        !err.contains("did not start") && !err.contains("SIGKILL") && !err.contains("failed"),
        "{err}"
    );
}

#[test]
fn an_http_servers_error_names_the_cause_not_a_rust_type() {
    let ws = TempWorkspace::new();
    ws.write(
        ".mcp.json",
        json!({"mcpServers": {"docs": {"type": "http", "url": dead_url()}}}).to_string(),
    );
    let out = subcommand(ws.path(), &["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let docs = &listed["servers"][0];
    assert_eq!(docs["status"], "failed", "{listed}");
    let why = docs["last_error"].as_str().unwrap();
    assert!(why.contains("initialize at http://127.0.0.1:"), "{why}");
    assert!(why.to_lowercase().contains("connect"), "{why}");
    assert!(
        !why.contains("Transport [") && !why.contains("troupe_mcp::") && !why.contains("rmcp::"),
        "{why}"
    );
}
