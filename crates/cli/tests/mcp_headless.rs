//! MCP servers in a headless run: one that never starts is waited for once (MCP_TIMEOUT) and
//! its end is never reported as a failure; an HTTP server's error names the server and the cause,
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
fn a_server_that_never_starts_is_waited_for_once_and_never_reported_killed() {
    let ws = TempWorkspace::new();
    // A "server" that never answers initialize.
    ws.write(
        ".mcp.json",
        json!({"mcpServers": {"slow": {"command": "sleep", "args": ["30"]}}}).to_string(),
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("done at once")]);
    // The run waits for it before its first model call, at most MCP_TIMEOUT (here 300 ms,
    // which is also its time to start), and goes on without it.
    let out = common::run(
        common::troupe(ws.path(), &server, troupe_testkit::Wire::Anthropic)
            .env("MCP_TIMEOUT", "300")
            .args(["-p", "hi", "--output-format", "json"])
            .args(["--permission-mode", "bypassPermissions"]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    // Said once, with the cause; ending the run then stops it quietly, no kill reported.
    assert_eq!(
        err.matches("did not finish initialize within 0.3 s")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("slow"), "{err}");
    assert!(!err.contains("SIGKILL") && !err.contains("exited"), "{err}");
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
