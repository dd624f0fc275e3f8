//! Telemetry through the binary, against a real OTLP/HTTP receiver (the OpenTelemetry
//! project's test sink): with Claude Code's variables a run exports its metrics, events and a
//! trace per turn; a repository's settings cannot switch it on; a collector that is gone
//! costs the run nothing but a warning in the log.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod otlp_support;

use common::{run, stderr, troupe};
use otlp_support::{attributes, sink, value};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// `cmd` with telemetry on towards the test sink, its exports tagged `test.case=case`; logs
/// as OTLP JSON, metrics and traces as protobuf.
fn with_telemetry<'c>(cmd: &'c mut Command, case: &str) -> &'c mut Command {
    cmd.env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &sink().url)
        .env("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/json")
        .env("OTEL_RESOURCE_ATTRIBUTES", format!("test.case={case}"))
}

/// Waits (the exporters run on threads of their own; the run flushes them before it exits,
/// so this is only for the receiver to write them down) until `ready` holds.
fn eventually<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never received: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn attrs(v: &Value) -> BTreeMap<String, String> {
    attributes(&v["attributes"])
}

#[test]
fn a_run_exports_claude_codes_metrics_events_and_one_trace_per_turn() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "write_file",
                json!({"path": "a.rs", "content": "fn a() {}\nfn b() {}\n"}),
            ),
            Step::text("written"),
        ],
    );
    let case = "one-run";
    let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
    let out = run(with_telemetry(&mut cmd, case).args([
        "-p",
        "write it",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let session = common::result_json(&out)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let s = sink();

    // Metrics: Claude Code's names and attributes.
    let points = eventually("the metrics", || {
        let p = s.points(case);
        p.iter()
            .any(|(n, _)| n == "claude_code.token.usage")
            .then_some(p)
    });
    let sum = |name: &str, filter: &[(&str, &str)]| -> f64 {
        points
            .iter()
            .filter(|(n, p)| {
                n == name && {
                    let a = attrs(p);
                    filter
                        .iter()
                        .all(|(k, v)| a.get(*k).map(String::as_str) == Some(*v))
                }
            })
            .map(|(_, p)| value(p))
            .sum()
    };
    assert_eq!(
        sum("claude_code.session.count", &[("session.id", &session)]),
        1.0
    );
    assert!(
        sum(
            "claude_code.token.usage",
            &[("type", "input"), ("model", "claude-sonnet-4-5")]
        ) > 0.0
    );
    assert!(sum("claude_code.token.usage", &[("type", "output")]) > 0.0);
    assert!(sum("claude_code.cost.usage", &[("model", "claude-sonnet-4-5")]) > 0.0);
    assert_eq!(
        sum("claude_code.lines_of_code.count", &[("type", "added")]),
        2.0
    );
    assert_eq!(
        sum(
            "claude_code.code_edit_tool.decision",
            &[
                ("tool_name", "write_file"),
                ("decision", "accept"),
                ("language", "rs")
            ]
        ),
        1.0
    );

    // Events: one user prompt (its text withheld), two model calls, the tool's decision and
    // result, all under the same prompt id.
    let events = eventually("the events", || {
        let e = s.events(case);
        (e.iter()
            .filter(|e| attrs(e)["event.name"] == "api_request")
            .count()
            == 2)
            .then_some(e)
    });
    let named = |name: &str| -> Vec<BTreeMap<String, String>> {
        events
            .iter()
            .map(attrs)
            .filter(|a| a["event.name"] == name)
            .collect()
    };
    let prompt = &named("user_prompt")[0];
    assert_eq!(prompt["prompt"], "<REDACTED>");
    assert_eq!(prompt["prompt_length"], "8");
    assert_eq!(prompt["session.id"], session);
    assert_eq!(events[0]["body"]["stringValue"], "claude_code.user_prompt");
    let result = &named("tool_result")[0];
    assert_eq!(result["tool_name"], "write_file");
    assert_eq!(result["success"], "true");
    assert_eq!(named("tool_decision")[0]["decision"], "accept");
    for a in named("api_request") {
        assert_eq!(a["model"], "claude-sonnet-4-5");
        assert_eq!(a["prompt.id"], prompt["prompt.id"]);
    }

    // Traces: one interaction, two model calls and one tool call under it, one trace id.
    let spans = eventually("the spans", || {
        let sp = s.spans(case);
        (sp.len() >= 4).then_some(sp)
    });
    let of = |name: &str| {
        spans
            .iter()
            .filter(|s| s["name"] == name)
            .collect::<Vec<_>>()
    };
    let interaction = of("claude_code.interaction");
    assert_eq!(interaction.len(), 1, "{spans:#?}");
    let root = interaction[0];
    assert_eq!(attrs(root)["prompt.id"], prompt["prompt.id"]);
    assert_eq!(of("claude_code.llm_request").len(), 2);
    assert_eq!(of("claude_code.tool").len(), 1);
    for span in spans
        .iter()
        .filter(|s| s["name"] != "claude_code.interaction")
    {
        assert_eq!(span["traceId"], root["traceId"]);
        assert_eq!(span["parentSpanId"], root["spanId"]);
    }
    assert_eq!(attrs(of("claude_code.tool")[0])["tool_name"], "write_file");
    // The events link to the trace they happened in.
    assert_eq!(events[0]["traceId"], root["traceId"]);
}

#[test]
fn a_repositorys_settings_cannot_switch_telemetry_on() {
    let ws = TempWorkspace::new();
    let case = "project-settings";
    ws.write(
        ".claude/settings.json",
        json!({"env": {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink().url,
            "OTEL_RESOURCE_ATTRIBUTES": format!("test.case={case}"),
        }})
        .to_string(),
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("hi")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(&out, "a project's settings cannot switch telemetry on");
    // The run has ended and flushed: nothing of its arrived.
    std::thread::sleep(Duration::from_millis(300));
    assert!(sink().received("metrics", case).is_empty());
}

#[test]
fn a_collector_that_is_gone_costs_the_run_nothing() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("fine")]);
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
    let out = run(with_telemetry(&mut cmd, "gone")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .args(["-p", "hi", "--output-format", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(common::result_json(&out)["result"], "fine");
}

#[test]
fn a_teammates_turns_join_the_trace_of_the_turn_that_spawned_or_mailed_it() {
    teammate_joins("in-process");
}

#[test]
fn a_process_teammates_turns_join_the_trace_too() {
    teammate_joins("process");
}

fn teammate_joins(mode: &str) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Report back."}),
            ),
            Step::text("spawned"),
        ],
    );
    // The turns alice's mail (and her idle notice) wake.
    common::ack_fallback(&server);
    server.script(
        "alice",
        [
            Step::tool("send_message", json!({"to": "lead", "content": "all done"})),
            Step::text("reported"),
        ],
    );
    let case = format!("team-{mode}");
    let case = case.as_str();
    let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
    let out = run(with_telemetry(&mut cmd, case).args([
        "-p",
        "go",
        "--teammate-mode",
        mode,
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(
        out.status.success(),
        "{}{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    let s = sink();
    let interactions = eventually("three interactions", || {
        let found: Vec<Value> = s
            .spans(case)
            .into_iter()
            .filter(|sp| sp["name"] == "claude_code.interaction")
            .collect();
        (found.len() >= 3).then_some(found)
    });
    let by = |agent: &str, cause: &str| {
        interactions
            .iter()
            .find(|sp| {
                let a = attrs(sp);
                a["agent.name"] == agent && a["troupe.cause"] == cause
            })
            .unwrap_or_else(|| panic!("{agent}'s {cause} turn in {interactions:#?}"))
    };
    let (lead, alice) = (by("lead", "prompt"), by("alice", "prompt"));
    let spawn_call = s
        .spans(case)
        .into_iter()
        .find(|sp| sp["name"] == "claude_code.tool" && attrs(sp)["tool_name"] == "spawn_teammate")
        .expect("the spawn call's span");
    // One trace: alice's first turn under the lead's, the lead's woken turn under alice's.
    assert_eq!(alice["traceId"], lead["traceId"]);
    assert_eq!(alice["parentSpanId"], lead["spanId"], "{spawn_call:#?}");
    let woken = interactions.iter().filter(|sp| {
        let a = attrs(sp);
        a["agent.name"] == "lead" && a["troupe.cause"] == "mail"
    });
    assert!(
        woken
            .into_iter()
            .any(|w| w["traceId"] == lead["traceId"] && w["parentSpanId"] == alice["spanId"]),
        "the lead's turn woken by alice's mail continues her trace: {interactions:#?}"
    );
}
