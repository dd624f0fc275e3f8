//! MCP prompts as slash commands through the binary, against server-everything's prompts:
//! `system/init` lists them as `mcp__<server>__<prompt>`, `-p "/mcp__everything__args-prompt
//! Paris France"` sends the text `prompts/get` returns for those words (checked in the fake
//! model's journal), and a missing argument or an unknown prompt is an error naming what to type.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{mcp, FakeServer, Reply, Step, TempWorkspace, Wire};

fn project() -> TempWorkspace {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(ws.path(), json!({"everything": mcp::everything()}));
    ws
}

fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("answered")));
    server
}

#[test]
fn a_prompt_runs_with_its_words_as_arguments_and_is_listed() {
    let ws = project();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/mcp__everything__args-prompt Paris Ile de France",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    let commands: Vec<&str> = lines[0]["slash_commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "mcp__everything__simple-prompt",
        "mcp__everything__args-prompt",
    ] {
        assert!(commands.contains(&name), "{name} missing: {commands:?}");
    }
    let prompt = server.journal()[0].all_text();
    // The first word is the city, the rest the last argument (the state).
    assert!(
        prompt.contains("What's weather in Paris, Ile de France?"),
        "{prompt}"
    );
    assert!(!prompt.contains("/mcp__"), "{prompt}");
    assert_eq!(lines.last().unwrap()["result"], "answered");
}

#[test]
fn a_prompt_without_arguments_sends_its_text() {
    let ws = project();
    let server = model();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic)
            .args(["-p", "/mcp__everything__simple-prompt"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = server.journal()[0].all_text();
    assert!(
        prompt.contains("This is a simple prompt without arguments."),
        "{prompt}"
    );
}

#[test]
fn a_missing_argument_or_unknown_prompt_is_an_error_naming_what_to_type() {
    let ws = project();
    let server = model();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic)
            .args(["-p", "/mcp__everything__args-prompt"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`city`") && err.contains("<city> [state]"),
        "{err}"
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "/mcp__everything__no-such-prompt"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/mcp__everything__simple-prompt"), "{err}");
    assert!(server.journal().is_empty(), "no model call was made");
}
