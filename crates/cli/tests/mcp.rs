//! MCP through the binary, against the real servers `.ci/run` installs: tool calls and results
//! over stdio and streamable HTTP (server-everything, server-filesystem, mcp-server-time),
//! list changes, a crash and its restart, the first call of `-p` waiting for the servers, a
//! server that never answers `initialize`
//! (configuration, `troupe mcp list` and rules are in `mcp_config.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod mcp_support;

use common::{json_lines, result_json, run, stderr, subcommand, troupe};
use mcp_support::*;
use serde_json::{json, Value};
use troupe_testkit::{mcp, FakeServer, Reply, Step, TempWorkspace, Wire};

#[test]
fn stdio_servers_answer_calls_with_text_images_and_structured_content() {
    let ws = TempWorkspace::new();
    ws.write("notes/today.txt", "buy milk");
    mcp::write_mcp_json(
        ws.path(),
        json!({
            "everything": mcp::everything(),
            "fs": mcp::filesystem(&ws.path().canonicalize().unwrap()),
            "time": mcp::time(),
        }),
    );
    let server = common::lead_server([
        // connect_mcp waits for each server's start-up, so the next round has their tools.
        Step::reply(
            Reply::tool("connect_mcp", json!({"name": "everything"}))
                .with_tool("connect_mcp", json!({"name": "fs"}))
                .with_tool("connect_mcp", json!({"name": "time"})),
        ),
        Step::dynamic(|req| {
            let tools = req.tool_names();
            for tool in [
                "mcp__everything__echo",
                "mcp__everything__get-tiny-image",
                "mcp__fs__read_text_file",
                "mcp__time__get_current_time",
            ] {
                assert!(tools.iter().any(|t| t == tool), "{tool} missing: {tools:?}");
            }
            // The server's schema is passed through (cleaned for the provider).
            let echo = req.body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "mcp__everything__echo")
                .unwrap();
            assert_eq!(echo["input_schema"]["type"], "object");
            assert!(
                echo["input_schema"]["properties"]["message"].is_object(),
                "{echo}"
            );
            assert!(echo["input_schema"].get("$schema").is_none(), "{echo}");
            Reply::tool("mcp__everything__echo", json!({"message": "hello mcp"}))
                .with_tool("mcp__everything__get-tiny-image", json!({}))
                .with_tool(
                    "mcp__everything__get-structured-content",
                    json!({"location": "New York"}),
                )
                .with_tool(
                    "mcp__fs__read_text_file",
                    json!({"path": "notes/today.txt"}),
                )
                .with_tool("mcp__time__get_current_time", json!({"timezone": "UTC"}))
        }),
        Step::dynamic(|req| {
            let results: Vec<Value> = req.body["messages"].as_array().unwrap().last().unwrap()
                ["content"]
                .as_array()
                .unwrap()
                .clone();
            assert_eq!(results.len(), 5, "{results:?}");
            let text = |i: usize| results[i]["content"].to_string();
            assert!(text(0).contains("hello mcp"), "{}", text(0));
            // The image arrives as an image block inside the tool_result.
            let image = results[1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "image")
                .unwrap_or_else(|| panic!("no image block: {}", results[1]));
            assert_eq!(image["source"]["type"], "base64");
            assert_eq!(image["source"]["media_type"], "image/png");
            assert!(image["source"]["data"].as_str().unwrap().len() > 20);
            assert!(text(2).contains("temperature"), "{}", text(2));
            assert!(text(3).contains("buy milk"), "{}", text(3));
            assert!(text(4).contains("UTC"), "{}", text(4));
            assert!(
                results.iter().all(|r| r.get("is_error").is_none()),
                "{results:?}"
            );
            Reply::text("all answered")
        }),
    ]);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &[
            "--allowedTools",
            "mcp__everything mcp__fs__* mcp__time__get_current_time",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "all answered");
    // Their stderr went to the logs, never the terminal.
    assert!(
        !stderr(&out).contains("Secure MCP Filesystem Server"),
        "{}",
        stderr(&out)
    );
    let fs_log = ws.read(".troupe/logs/mcp/fs.log");
    assert!(fs_log.contains("--- troupe started"), "{fs_log}");
    for name in ["everything", "fs", "time"] {
        for pid in started_pids(ws.path(), name) {
            assert!(!common::alive(pid), "{name} server {pid} outlived troupe");
        }
    }
}

#[test]
fn streamable_http_server_answers_calls_with_an_openai_model() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(
        ws.path(),
        json!({"web": {"type": "http", "url": mcp::everything_http(), "headers": {"X-Client": "troupe-${TROUPE_TEST_UNSET:-test}"}}}),
    );
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "web"})),
        Step::dynamic(|req| {
            let text = last_result(req, false);
            assert!(text.contains("mcp__web__get-sum"), "{text}");
            Reply::tool("mcp__web__get-sum", json!({"a": 19, "b": 23}))
                .with_tool("mcp__web__get-tiny-image", json!({}))
        }),
        Step::dynamic(|req| {
            let text = req.all_text();
            assert!(text.contains("42"), "{text}");
            // OpenAI tool messages take text only: the tool message names the image, and a
            // user message after it carries it as an `image_url` part.
            assert!(
                text.contains("1 image(s) returned; shown in the next message"),
                "{text}"
            );
            assert!(
                req.body.to_string().contains("data:image/png;base64,"),
                "{}",
                req.body
            );
            Reply::text("sum done")
        }),
    ]);
    let out = headless(&ws, &server, Wire::OpenAi, &["--allowedTools", "mcp__web"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "sum done");
}

#[test]
fn a_legacy_sse_server_from_mcp_json_is_offered_on_the_first_call() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(
        ws.path(),
        json!({"old": {"type": "sse", "url": mcp::everything_sse()}}),
    );
    let server = common::lead_server([
        Step::dynamic(|req| {
            let names = req.tool_names();
            assert!(names.iter().any(|n| n == "mcp__old__get-sum"), "{names:?}");
            Reply::tool("mcp__old__get-sum", json!({"a": 40, "b": 2}))
        }),
        Step::dynamic(|req| {
            let text = last_result(req, false);
            assert!(text.contains("42"), "{text}");
            Reply::text("old server ok")
        }),
    ]);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__old"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "old server ok");
}

#[test]
fn a_changed_tool_list_is_offered_on_the_next_round() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::dynamic(|req| {
            assert!(!req.tool_names().contains(&"mcp__fx__fresh".to_string()));
            Reply::tool("mcp__fx__add_tool", json!({"name": "fresh"}))
        }),
        Step::dynamic(|req| {
            assert_eq!(last_result(req, false), "added fresh");
            let tools = req.tool_names();
            assert!(tools.contains(&"mcp__fx__fresh".to_string()), "{tools:?}");
            Reply::tool("mcp__fx__fresh", json!({}))
        }),
        Step::dynamic(|req| Reply::text(last_result(req, false))),
    ]);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__fx"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "I am fresh");
}

#[test]
fn a_server_that_exits_mid_session_gives_an_error_then_is_restarted() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::tool("mcp__fx__crash", json!({})),
        Step::dynamic(|req| {
            let text = last_result(req, true);
            common::assert_contains(
                &text,
                "MCP server `fx` stopped while running mcp__fx__crash",
            );
            assert!(text.contains("exit status: 3"), "{text}");
            assert!(text.contains("restarts it on the next call"), "{text}");
            // Its tools stay on offer, so the model can call them again.
            assert!(req.tool_names().contains(&"mcp__fx__echo".to_string()));
            Reply::tool("mcp__fx__echo", json!({"text": "back again"}))
        }),
        Step::dynamic(|req| Reply::text(last_result(req, false))),
    ]);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__fx"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "back again");
    // The user hears of it once, in troupe's words; the SDK's own messages stay out.
    let err = stderr(&out);
    assert!(err.contains("MCP server stopped"), "{err}");
    assert!(!err.contains("ERROR") && !err.contains("rmcp"), "{err}");
    let pids = started_pids(ws.path(), "fx");
    assert_eq!(pids.len(), 2, "started, then restarted once: {pids:?}");
    assert!(pids.iter().all(|pid| !common::alive(*pid)));
}

#[test]
fn a_script_offers_the_servers_tools_on_its_first_model_call() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(ws.path(), json!({"time": mcp::time()}));
    let server = common::lead_server([Step::dynamic(|req| {
        let tools = req.tool_names();
        assert!(
            tools.iter().any(|t| t == "mcp__time__get_current_time"),
            "the first call lacks the server's tools: {tools:?}"
        );
        Reply::text("had them")
    })]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "what time is it",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(
        lines[0]["mcp_servers"],
        json!([{"name": "time", "status": "connected"}])
    );
    assert_eq!(lines.last().unwrap()["result"], "had them");
}

#[test]
fn a_server_that_never_answers_initialize_is_waited_for_up_to_mcp_timeout() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(
        ws.path(),
        json!({"mute": {"command": "sleep", "args": ["600"]}}),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::dynamic(|req| {
            assert!(req.tool_names().iter().all(|t| !t.starts_with("mcp__mute")));
            assert!(req.system().contains("mute (stdio)"), "{}", req.system());
            Reply::text("answered without it")
        })],
    );
    // A start-up limit of ten minutes, but the first call waits only MCP_TIMEOUT for it.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("MCP_TIMEOUT", "300")
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--settings",
            r#"{"mcp_startup_timeout": 600}"#,
        ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    common::assert_contains(
        &err,
        "MCP server `mute` did not connect within 300 ms (MCP_TIMEOUT)",
    );
    let lines = json_lines(&out);
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(
        lines[0]["mcp_servers"],
        json!([{"name": "mute", "status": "pending"}])
    );
    assert_eq!(lines.last().unwrap()["result"], "answered without it");
    let pids = started_pids(ws.path(), "mute");
    assert_eq!(pids.len(), 1);
    assert!(!common::alive(pids[0]), "the silent server outlived troupe");
    // `troupe mcp list` waits for it only as long as the start-up limit, then reports it.
    let out = subcommand(
        ws.path(),
        &[
            "mcp",
            "list",
            "--json",
            "--settings",
            r#"{"mcp_startup_timeout": 0.5}"#,
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mute = &listed["servers"][0];
    assert_eq!(mute["name"], "mute");
    assert_eq!(mute["status"], "failed");
    assert_eq!(mute["transport"], "stdio");
    assert_eq!(mute["tools"], 0);
    assert!(
        mute["last_error"]
            .as_str()
            .unwrap()
            .contains("did not finish initialize within 0.5 s"),
        "{mute}"
    );
}
