//! The client against the real reference servers (installed by `.ci/run`): stdio, streamable
//! HTTP and legacy SSE,
//! list changes, a crash and a restart, a server that never answers `initialize`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use troupe_mcp::{McpConfig, McpManager, McpOptions, Status};
use troupe_testkit::{mcp, TempWorkspace};
use troupe_tools::{DynTool, ToolContext, ToolOutput, Workspace};

fn manager(ws: &TempWorkspace, servers: Value, startup: Duration) -> Arc<McpManager> {
    let mut config = McpConfig::new();
    let env = |name: &str| std::env::var(name).ok();
    config
        .add_document("test", &json!({"mcpServers": servers}).to_string(), &env)
        .unwrap();
    let mut options = McpOptions::new(ws.path().to_path_buf());
    options.startup_timeout = startup;
    McpManager::new(&config, options)
}

async fn call(tools: &[DynTool], ws: &TempWorkspace, name: &str, input: Value) -> ToolOutput {
    let tool = tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let ctx = ToolContext::new(Arc::new(Workspace::new(ws.path()).unwrap()), "lead");
    tool.call(input, &ctx).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_http_and_python_servers_answer_calls() {
    let ws = TempWorkspace::new();
    let m = manager(
        &ws,
        json!({
            "everything": mcp::everything(),
            "web": {"type": "http", "url": mcp::everything_http()},
            "time": mcp::time(),
        }),
        Duration::from_secs(60),
    );
    m.start(&tokio::runtime::Handle::current());
    m.settle(Duration::from_secs(60)).await;
    for status in m.statuses() {
        assert_eq!(status.status, Status::Connected, "{status:?}");
    }
    let tools = m.tools().await;
    let out = call(
        &tools,
        &ws,
        "mcp__everything__echo",
        json!({"message": "hi"}),
    )
    .await;
    assert!(!out.is_error && out.content.contains("hi"), "{out:?}");
    let out = call(&tools, &ws, "mcp__web__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(!out.is_error && out.content.contains("42"), "{out:?}");
    let out = call(
        &tools,
        &ws,
        "mcp__time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(!out.is_error && out.content.contains("UTC"), "{out:?}");
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_server_answers_calls() {
    let ws = TempWorkspace::new();
    let m = manager(
        &ws,
        json!({"old": {"type": "sse", "url": mcp::everything_sse(), "headers": {"X-Client": "troupe"}}}),
        Duration::from_secs(60),
    );
    m.start(&tokio::runtime::Handle::current());
    m.settle(Duration::from_secs(60)).await;
    let statuses = m.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].status, Status::Connected, "{statuses:?}");
    let tools = m.tools().await;
    assert!(tools.len() > 3, "the server's tools are offered");
    let out = call(&tools, &ws, "mcp__old__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(!out.is_error && out.content.contains("42"), "{out:?}");
    // Calls in a row on the one stream, each answered.
    for word in ["one", "two"] {
        let out = call(&tools, &ws, "mcp__old__echo", json!({"message": word})).await;
        assert!(!out.is_error && out.content.contains(word), "{out:?}");
    }
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_crashes_and_restarts() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    let m = manager(
        &ws,
        json!({"fx": mcp::fixture(&log)}),
        Duration::from_secs(60),
    );
    m.start(&tokio::runtime::Handle::current());
    m.settle(Duration::from_secs(60)).await;
    let tools = m.tools().await;
    let out = call(&tools, &ws, "mcp__fx__add_tool", json!({"name": "fresh"})).await;
    assert_eq!(out, ToolOutput::ok("added fresh"));
    let tools = m.tools().await;
    let out = call(&tools, &ws, "mcp__fx__fresh", json!({})).await;
    assert_eq!(out, ToolOutput::ok("I am fresh"));
    let out = call(&tools, &ws, "mcp__fx__crash", json!({})).await;
    assert!(
        out.is_error && out.content.contains("stopped while running"),
        "{out:?}"
    );
    assert_eq!(m.statuses()[0].status, Status::Failed);
    let out = call(&tools, &ws, "mcp__fx__echo", json!({"text": "back"})).await;
    assert_eq!(out, ToolOutput::ok("back"));
    assert_eq!(m.statuses()[0].status, Status::Connected);
    m.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_initializes_is_reported_after_its_timeout() {
    let ws = TempWorkspace::new();
    let m = manager(
        &ws,
        json!({"mute": {"command": "sleep", "args": ["600"]}}),
        Duration::from_millis(500),
    );
    m.start(&tokio::runtime::Handle::current());
    assert!(m.tools().await.is_empty());
    m.settle(Duration::from_secs(30)).await;
    let status = &m.statuses()[0];
    assert_eq!(status.status, Status::Failed);
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("did not finish initialize within 0.5 s"),
        "{status:?}"
    );
    m.shutdown();
}
