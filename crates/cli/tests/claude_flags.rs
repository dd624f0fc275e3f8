//! Claude Code's headless flags that change how a run ends, through the binary:
//! `--max-budget-usd` (stops the run, `error_max_budget_usd`), `--json-schema`
//! (`structured_output`) and `--fallback-model`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, repl, result_json, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// `troupe -p hi --output-format json EXTRA…` in `ws`, run to completion.
fn json_run(ws: &TempWorkspace, server: &FakeServer, extra: &[&str]) -> std::process::Output {
    run(troupe(ws.path(), server, Wire::Anthropic)
        .args(["-p", "hi", "--output-format", "json"])
        .args(extra))
}

#[test]
fn max_budget_usd_stops_the_run_once_its_cost_passes_and_says_error_max_budget_usd() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "alpha\n");
    let server = FakeServer::start();
    // A lead that would read forever; each call costs about $0.32 at Sonnet's prices.
    server.set_fallback(|_| {
        Step::reply(Reply::tool("read_file", json!({"path": "a.txt"})).usage(100_000, 1_000))
    });
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "read a.txt again and again",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
        "--max-budget-usd",
        "0.5",
        "--max-turns",
        "10",
    ]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["num_turns"], 2, "{result}");
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.5, "{result}");
    assert_eq!(
        server.requests_for("lead").len(),
        2,
        "no call after the budget ran out"
    );

    // Under the budget, the same flag changes nothing.
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = json_run(&ws, &server, &["--max-budget-usd", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["subtype"], "success");
}

const SCHEMA: &str =
    r#"{"type": "object", "properties": {"files": {"type": "integer"}}, "required": ["files"]}"#;

fn with_schema(ws: &TempWorkspace, server: &FakeServer) -> std::process::Output {
    run(troupe(ws.path(), server, Wire::Anthropic).args([
        "-p",
        "count the files",
        "--output-format",
        "json",
        "--json-schema",
        SCHEMA,
    ]))
}

#[test]
fn json_schema_puts_the_checked_answer_in_structured_output() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text(r#"{"files": 3}"#)]);
    let out = with_schema(&ws, &server);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["structured_output"], json!({"files": 3}));
    // The lead was told the schema.
    let system = server.requests_for("lead")[0].system();
    assert!(system.contains(r#""required":["files"]"#), "{system}");

    // A wrong answer is sent back once with the fault; the corrected one is used.
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::text("three files"), Step::text(r#"{"files": 3}"#)],
    );
    let out = with_schema(&ws, &server);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["structured_output"], json!({"files": 3}), "{result}");
    assert_eq!(result["num_turns"], 2);
    let retry = server.requests_for("lead")[1].all_text();
    assert!(retry.contains("it is not JSON"), "{retry}");

    // Wrong twice: an error naming the fault, and no structured_output.
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::text(r#"{"files": "3"}"#),
            Step::text(r#"{"count": 3}"#),
        ],
    );
    let out = with_schema(&ws, &server);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert!(result.get("structured_output").is_none());
    let error = result["errors"][0].as_str().unwrap();
    assert!(
        error.contains("lacks the required property `files`"),
        "{error}"
    );
    assert!(server.requests_for("lead")[1]
        .all_text()
        .contains("$.files should be integer"));
}

#[test]
fn fallback_model_takes_over_the_turn_when_the_model_stays_overloaded() {
    use troupe_testkit::Fault;
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|req| match req.model().as_str() {
        "claude-haiku-4-5" => Step::text("answered by the fallback"),
        _ => Step::fault(Fault::status(529)),
    });
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "summon-the-answer",
        "--model",
        "claude-sonnet-4-5",
        "--fallback-model",
        "claude-haiku-4-5",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["result"], "answered by the fallback", "{result}");
    let err = stderr(&out);
    assert!(
        err.contains("claude-sonnet-4-5 failed")
            && err.contains("--fallback-model claude-haiku-4-5"),
        "{err}"
    );
    let models: Vec<String> = server
        .requests_for("lead")
        .iter()
        .map(|r| r.model())
        .collect();
    assert!(models.len() >= 2, "{models:?}");
    assert_eq!(models.last().unwrap(), "claude-haiku-4-5");
    // The prompt was asked once: the fallback answered the same conversation.
    let last = server.requests_for("lead").last().unwrap().all_text();
    assert_eq!(last.matches("summon-the-answer").count(), 1, "{last}");

    // Without the flag the run fails on the overload.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "summon-the-answer",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(result_json(&out)["subtype"], "error_during_execution");
}

#[test]
fn tools_restricts_the_team_tools_and_every_teammate_too() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "reader", "prompt": "Read a.txt."}),
            ),
            Step::text("spawned"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
        "--tools",
        "Read,spawn_teammate",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let lead = server.requests_for("lead")[0].tool_names();
    assert!(lead.contains(&"read_file".to_string()), "{lead:?}");
    assert!(lead.contains(&"spawn_teammate".to_string()), "{lead:?}");
    for gone in ["bash", "send_message", "create_task", "broadcast", "task"] {
        assert!(!lead.contains(&gone.to_string()), "{gone}: {lead:?}");
    }
    let alice = server.requests_for("alice");
    let alice = alice.first().expect("alice was called").tool_names();
    assert!(alice.contains(&"read_file".to_string()), "{alice:?}");
    // A teammate keeps its mail: it is how it takes part at all.
    assert!(alice.contains(&"send_message".to_string()), "{alice:?}");
    for gone in ["bash", "write_file", "edit_file", "grep"] {
        assert!(!alice.contains(&gone.to_string()), "{gone}: {alice:?}");
    }
}

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep\nmodel: claude-reviewer-model\n---\nYou are the REVIEWER-OF-RECORD.\n";

#[test]
fn agent_runs_the_lead_as_the_definition_with_its_prompt_tools_and_model() {
    let ws = TempWorkspace::new();
    ws.write(".claude/agents/reviewer.md", REVIEWER);
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = json_run(&ws, &server, &["--agent", "reviewer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("--agent"), "{}", stderr(&out));
    let request = &server.requests_for("lead")[0];
    assert!(request.system().contains("REVIEWER-OF-RECORD"));
    assert_eq!(request.model(), "claude-reviewer-model");
    let offered = request.tool_names();
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
    assert!(offered.contains(&"grep".to_string()), "{offered:?}");
    for gone in ["bash", "write_file", "spawn_teammate", "task"] {
        assert!(!offered.contains(&gone.to_string()), "{gone}: {offered:?}");
    }

    // --model wins over the definition's.
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hi",
        "--agent",
        "reviewer",
        "--model",
        "claude-given",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.requests_for("lead")[0].model(), "claude-given");
}

#[test]
fn the_agent_setting_runs_the_lead_as_the_definition_too() {
    let ws = TempWorkspace::new();
    ws.write(".claude/agents/reviewer.md", REVIEWER);
    ws.write(".claude/settings.json", r#"{"agent": "reviewer"}"#);
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = json_run(&ws, &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request = &server.journal()[0];
    assert!(
        request.system().contains("REVIEWER-OF-RECORD"),
        "{}",
        request.system()
    );
    assert_eq!(request.model(), "claude-reviewer-model");
}

#[test]
fn an_unknown_agent_is_an_error_listing_the_known_ones_before_any_model_call() {
    let ws = TempWorkspace::new();
    ws.write(".claude/agents/reviewer.md", REVIEWER);
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi", "--agent", "nobody"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("agent nobody"), "{err}");
    assert!(err.contains("reviewer"), "{err}");
    assert!(server.journal().is_empty(), "no model call");
}

#[test]
fn file_attaches_each_files_text_to_the_first_prompt() {
    let ws = TempWorkspace::new();
    ws.write("notes/a.txt", "ALPHA-CONTENT\n");
    ws.write("b.md", "BETA-CONTENT\n");
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "--file",
        "notes/a.txt",
        "--file",
        "b.md",
        "file_abc:remote.txt",
        "--",
        "summarise these",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--file file_abc:remote.txt: troupe has no file API"),
        "{err}"
    );
    assert!(!err.contains("--file is accepted"), "{err}");
    let sent = server.requests_for("lead")[0].all_text();
    assert!(sent.contains("summarise these"), "{sent}");
    assert!(
        sent.contains("<file path=\"notes/a.txt\">\nALPHA-CONTENT"),
        "{sent}"
    );
    assert!(
        sent.contains("<file path=\"b.md\">\nBETA-CONTENT"),
        "{sent}"
    );

    // A path that names nothing stops the run before any model call.
    let server = FakeServer::start();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic)
            .args(["-p", "--file", "gone.txt", "--", "hi"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--file gone.txt"), "{}", stderr(&out));
    assert!(server.journal().is_empty());
}

#[test]
fn file_in_the_repl_joins_the_first_typed_prompt_only() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "ALPHA-CONTENT\n");
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("done"));
    let out = repl(
        ws.path(),
        &server,
        &["--file", "a.txt"],
        "first question\nsecond question\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    let first = requests.first().expect("a first turn").all_text();
    assert!(
        first.contains("ALPHA-CONTENT") && first.contains("first question"),
        "{first}"
    );
    let last = requests.last().expect("a second turn").messages();
    let second = serde_json::to_string(&last.last()).unwrap();
    assert!(second.contains("second question"), "{second}");
    assert!(!second.contains("ALPHA-CONTENT"), "{second}");
}

fn hook_run(ws: &TempWorkspace, extra: &[&str]) -> std::process::Output {
    ws.write(
        ".claude/settings.json",
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo HOOK-SAID; echo HOOK-ERR >&2"}
        ]}]}})
        .to_string(),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "true"})),
            Step::text("done"),
        ],
    );
    run(troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "-p",
            "go",
            "--permission-mode",
            "bypassPermissions",
            "--include-hook-events",
        ])
        .args(extra))
}

#[test]
fn include_hook_events_streams_each_hook_run_in_claude_codes_shape() {
    let ws = TempWorkspace::new();
    let out = hook_run(&ws, &["--output-format", "stream-json", "--verbose"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    let session = lines[0]["session_id"].clone();
    let of = |subtype: &str| -> Vec<serde_json::Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "system" && l["subtype"] == subtype)
            .cloned()
            .collect()
    };
    let (started, responses) = (of("hook_started"), of("hook_response"));
    assert_eq!(started.len(), 1, "{lines:?}");
    assert_eq!(responses.len(), 1, "{lines:?}");
    let (started, response) = (&started[0], &responses[0]);
    assert_eq!(started["hook_event"], "PreToolUse");
    assert_eq!(started["hook_name"], "PreToolUse:Bash");
    assert_eq!(started["session_id"], session);
    assert_eq!(response["hook_id"], started["hook_id"]);
    assert_eq!(response["outcome"], "success");
    assert_eq!(response["exit_code"], 0);
    assert_eq!(response["stdout"], "HOOK-SAID\n");
    assert_eq!(response["stderr"], "HOOK-ERR\n");
    assert!(response["uuid"].is_string() && response["uuid"] != started["uuid"]);
    let at = |l: &serde_json::Value| lines.iter().position(|x| x == l);
    assert!(at(started) < at(response));

    // Without the flag, or without stream-json, no such line.
    let ws = TempWorkspace::new();
    let out = hook_run(&ws, &["--output-format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("--include-hook-events applies to --output-format stream-json"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hook_started"));
}
