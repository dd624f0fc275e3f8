//! Claude Code's model aliases through the binary: `--model`, the `model` setting,
//! `ANTHROPIC_MODEL`, the `ANTHROPIC_DEFAULT_*_MODEL` overrides, an agent definition's and a
//! spawned teammate's `model:`, the `[1m]` suffix and its beta header, and an alias on an
//! OpenAI-compatible server checked against its model list.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{ack_fallback, headless_bypass, json_lines, result_json, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("ok"));
    server
}

#[track_caller]
fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
}

#[test]
fn an_alias_flag_sends_the_full_id_and_the_results_name_it() {
    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--model",
        "haiku",
    ]));
    ok(&out);
    assert_eq!(server.requests_for("lead")[0].model(), "claude-haiku-4-5");
    let usage = &result_json(&out)["modelUsage"];
    assert!(usage.get("claude-haiku-4-5").is_some(), "{usage}");

    // stream-json's system/init names the resolved id too.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "opus",
    ]));
    ok(&out);
    let lines = json_lines(&out);
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["model"], "claude-opus-4-1");
}

#[test]
fn the_setting_and_anthropic_model_resolve_with_the_override_variables() {
    let ws = TempWorkspace::new();
    ws.write(".claude/settings.json", r#"{"model": "opus"}"#);
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-5")
        .args(["-p", "hi", "--output-format", "json"]));
    ok(&out);
    assert_eq!(server.requests_for("lead")[0].model(), "claude-opus-4-5");

    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("ANTHROPIC_MODEL", "sonnet")
        .env("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-6")
        .args(["-p", "hi", "--output-format", "json"]));
    ok(&out);
    assert_eq!(server.requests_for("lead")[0].model(), "claude-sonnet-4-6");
}

#[test]
fn the_1m_suffix_sends_the_beta_and_widens_the_window() {
    let ws = TempWorkspace::new();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--output-format",
        "json",
        "--model",
        "sonnet[1m]",
    ]));
    ok(&out);
    let request = &server.requests_for("lead")[0];
    assert_eq!(request.model(), "claude-sonnet-4-5");
    let beta = request.header("anthropic-beta").unwrap_or_default();
    assert!(beta.contains("context-1m-2025-08-07"), "{beta}");
    let usage = &result_json(&out)["modelUsage"]["claude-sonnet-4-5[1m]"];
    assert_eq!(usage["contextWindow"], 1_000_000, "{usage}");

    // Without the suffix, no beta header of that kind.
    let server = model();
    ok(&run(
        troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi", "--model", "sonnet"])
    ));
    let beta = server.requests_for("lead")[0]
        .header("anthropic-beta")
        .unwrap_or_default()
        .to_string();
    assert!(!beta.contains("context-1m"), "{beta}");
}

#[tokio::test]
async fn an_agent_definitions_and_a_spawns_alias_resolve() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: the reviewer agent\nmodel: haiku\n---\nYou review.\n",
    );
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "rev", "role": "reviewer", "prompt": "review", "agent": "reviewer"}),
            ),
            Step::tool(
                "spawn_teammate",
                json!({"name": "big", "role": "planner", "prompt": "plan", "model": "opus"}),
            ),
            Step::text("spawned"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    ok(&out);
    assert_eq!(server.requests_for("rev")[0].model(), "claude-haiku-4-5");
    assert_eq!(server.requests_for("big")[0].model(), "claude-opus-4-1");
    let roster = common::team_roster(ws.path()).await.unwrap();
    let rev = roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "rev")
        .cloned()
        .unwrap();
    assert_eq!(rev["model"], "claude-haiku-4-5", "{rev}");
}

#[test]
fn an_alias_an_openai_server_does_not_serve_is_an_error_naming_its_models() {
    let ws = TempWorkspace::new();
    let server = model();
    server.set_served_models(&["qwen2.5-coder:7b", "claude-haiku-4-5"]);
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "hi", "--model", "opus"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("`opus`"), "{err}");
    assert!(err.contains("qwen2.5-coder:7b, claude-haiku-4-5"), "{err}");
    assert!(server.requests_for("lead").is_empty());

    // An alias the server serves under the id it stands for is sent as that id.
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "hi", "--model", "haiku"]));
    ok(&out);
    assert_eq!(server.requests_for("lead")[0].model(), "claude-haiku-4-5");
}
