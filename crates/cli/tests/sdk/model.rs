//! The scripted model both Agent SDK suites (sdk.rs, Python; sdk_ts.rs, TypeScript) drive.

use serde_json::json;
use std::time::Duration;
use troupe_testkit::{FakeServer, Reply, Step};

/// The scripted model: "list" runs `ls`, "touch NAME" runs `touch NAME`, "slow" answers after a
/// long wait (for the interrupt), "spawn helper" spawns the teammate `helper` (who answers
/// "helper here"), a prompt with images is told how many and of what type, anything else is
/// echoed; a tool result is quoted back.
pub fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|req| {
        if let Some((output, _)) = req.last_tool_result() {
            return Step::reply(Reply::text(format!("The tool said: {}", output.trim())));
        }
        // The newest prompt only: an interrupted one stays in the conversation before it.
        let last = req
            .messages()
            .last()
            .and_then(|m| {
                m.content.iter().rev().find_map(|b| match b {
                    troupe_protocol::ContentBlock::Text { text } => Some(text.clone()),
                    _ => None,
                })
            })
            .unwrap_or_default();
        let images: Vec<String> = req
            .messages()
            .last()
            .map(|m| m.images().map(|i| i.media_type.clone()).collect())
            .unwrap_or_default();
        if req.agent == "helper" {
            Step::reply(Reply::text("helper here"))
        } else if !images.is_empty() {
            Step::reply(Reply::text(format!(
                "I see {} image(s): {}",
                images.len(),
                images.join(", ")
            )))
        } else if last.contains("spawn helper") {
            Step::tool(
                "spawn_teammate",
                json!({"name": "helper", "role": "helper", "prompt": "say hi"}),
            )
        } else if last.contains("list") {
            Step::tool("bash", json!({"command": "ls"}))
        } else if let Some(name) = last.strip_prefix("touch ") {
            Step::tool(
                "bash",
                json!({ "command": format!("touch {}", name.trim()) }),
            )
        } else if last.contains("add 2 and 3") {
            match req.tool_names().iter().any(|t| t == "mcp__calc__add") {
                true => Step::tool("mcp__calc__add", json!({"a": 2, "b": 3})),
                false => Step::reply(Reply::text("no calc tool on the first call")),
            }
        } else if last.contains("write draft") {
            Step::tool(
                "write_file",
                json!({"path": "notes/draft.txt", "content": "hello"}),
            )
        } else if last.contains("ask me") {
            Step::tool(
                "ask_user_question",
                json!({"questions": [{"question": "Which colour?", "header": "Colour",
                    "multiSelect": false, "options": [{"label": "Red", "description": "warm"},
                    {"label": "Blue", "description": "cool"}]}]}),
            )
        } else if last.contains("remove build") {
            Step::tool("bash", json!({"command": "rm -rf build"}))
        } else if last.contains("slow") {
            Step::delay(Duration::from_secs(60), Step::text("too late"))
        } else {
            Step::reply(Reply::text(format!("heard: {}", last.trim())))
        }
    });
    server
}

/// The model named by each request `agent` made, in order.
pub fn models_of(server: &FakeServer, agent: &str) -> Vec<String> {
    server
        .requests_for(agent)
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect()
}
