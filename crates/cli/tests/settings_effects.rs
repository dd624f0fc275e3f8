//! Claude Code settings troupe honours, through the binary against the fake model:
//! `apiKeyHelper` (its output is the key, sent as Claude Code sends it; a project's runs only
//! after trust), `ANTHROPIC_CUSTOM_HEADERS`, `language`, `claudeMdExcludes`, and which
//! `.mcp.json` servers `enabledMcpjsonServers`/`disabledMcpjsonServers`/
//! `enableAllProjectMcpServers` start.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    server
}

#[test]
fn the_api_key_helpers_output_is_the_key_and_custom_headers_go_with_every_request() {
    let ws = TempWorkspace::new();
    ws.write(
        ".home/.claude/settings.json",
        json!({"apiKeyHelper": "echo ran > helper-ran; printf 'helper-key\\n'"}).to_string(),
    );
    let server = FakeServer::start();
    server.set_fallback(|req| match req.last_tool_result() {
        None => Step::tool("bash", json!({"command": "env > seen-env.txt"})),
        Some(_) => Step::text("done"),
    });
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_CUSTOM_HEADERS", "X-Team: blue\nX-Trace: a:b")
        .args(["-p", "hi", "--permission-mode", "bypassPermissions"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ws.exists("helper-ran"), "the helper runs in the workspace");
    let journal = server.journal();
    let first = &journal[0];
    assert_eq!(first.header("x-api-key"), Some("helper-key"));
    assert_eq!(first.header("authorization"), Some("Bearer helper-key"));
    assert_eq!(first.header("x-team"), Some("blue"));
    assert_eq!(first.header("x-trace"), Some("a:b"));
    // The key is troupe's alone: a command the model runs does not see it.
    let seen = ws.read("seen-env.txt");
    assert!(seen.contains("PATH="), "{seen}");
    assert!(!seen.contains("helper-key"), "{seen}");
}

#[test]
fn a_key_in_the_environment_comes_first_and_a_failing_helper_is_an_error() {
    let ws = TempWorkspace::new();
    ws.write(
        ".home/.claude/settings.json",
        json!({"apiKeyHelper": "echo ran > helper-ran; echo nope >&2; exit 3"}).to_string(),
    );
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("helper-ran"), "ANTHROPIC_API_KEY is set");
    assert_eq!(server.journal()[0].header("x-api-key"), Some("test-key"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("ANTHROPIC_API_KEY")
        .args(["-p", "hi"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("apiKeyHelper") && err.contains("nope"),
        "{err}"
    );
    assert_eq!(server.journal().len(), 1, "no model call without a key");
}

#[test]
fn an_untrusted_projects_api_key_helper_does_not_run() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        json!({"apiKeyHelper": "echo ran > helper-ran; echo k"}).to_string(),
    );
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("ANTHROPIC_API_KEY")
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("apiKeyHelper"), "{}", stderr(&out));
    assert!(!ws.exists("helper-ran"));
    assert!(server.journal().is_empty());
}

#[test]
fn language_ends_the_prompt_and_excluded_memory_files_are_not_read() {
    let ws = TempWorkspace::new();
    ws.write("CLAUDE.md", "Project rule: tabs.");
    ws.write("CLAUDE.local.md", "Private rule: spaces.");
    ws.write(
        ".claude/settings.json",
        json!({"language": "French", "claudeMdExcludes": ["**/CLAUDE.local.md"]}).to_string(),
    );
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let system = server.journal()[0].system();
    assert!(system.contains("Respond in French."), "{system}");
    assert!(system.contains("Project rule: tabs."), "{system}");
    assert!(!system.contains("Private rule"), "{system}");
}

/// The servers `system/init` lists for a workspace whose `.mcp.json` has `a`, `b` and `c`,
/// with `settings`.
fn started(settings: serde_json::Value) -> Vec<String> {
    let ws = TempWorkspace::new();
    let server_entry = json!({"command": "true"});
    ws.write(
        ".mcp.json",
        json!({"mcpServers": {"a": server_entry, "b": server_entry, "c": server_entry}})
            .to_string(),
    );
    ws.write(".claude/settings.json", settings.to_string());
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("MCP_TIMEOUT", "200")
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"]));
    assert!(out.status.success(), "{}", stderr(&out));
    json_lines(&out)[0]["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn mcp_json_servers_start_as_the_enabled_and_disabled_lists_say() {
    assert_eq!(started(json!({})), ["a", "b", "c"]);
    assert_eq!(
        started(json!({"enabledMcpjsonServers": ["a", "b"], "disabledMcpjsonServers": ["b"]})),
        ["a"]
    );
    assert_eq!(
        started(
            json!({"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["a"], "disabledMcpjsonServers": ["c"]})
        ),
        ["a", "b"]
    );
}
