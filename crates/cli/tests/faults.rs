//! Model faults through the real binary: retried when transient, clear errors otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use std::time::{Duration, Instant};
use troupe_testkit::{FakeServer, Fault, Step, TempWorkspace, Wire};

fn recovers_after(fault: Fault, wire: Wire) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::fault(fault), Step::text("recovered")]);
    let out = run(troupe(ws.path(), &server, wire).args(["-p", "x", "--output-format", "json"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "recovered");
    assert_eq!(
        server.requests_for("lead").len(),
        2,
        "one failed call, one retry"
    );
}

#[test]
fn rate_limit_with_retry_after_is_retried() {
    recovers_after(
        Fault::Status {
            code: 429,
            retry_after: Some(0),
            body: "{\"error\":\"slow down\"}".into(),
        },
        Wire::Anthropic,
    );
}

#[test]
fn overloaded_529_is_retried() {
    recovers_after(Fault::Overloaded, Wire::Anthropic);
}

#[test]
fn server_error_500_is_retried_openai() {
    recovers_after(
        Fault::Status {
            code: 500,
            retry_after: None,
            body: "{\"error\":\"boom\"}".into(),
        },
        Wire::OpenAi,
    );
}

#[test]
fn disconnect_mid_stream_is_retried() {
    recovers_after(Fault::DisconnectMidStream, Wire::Anthropic);
    recovers_after(Fault::DisconnectMidStream, Wire::OpenAi);
}

#[test]
fn error_event_mid_stream_is_retried() {
    recovers_after(Fault::ErrorEvent, Wire::Anthropic);
}

#[test]
fn malformed_event_is_reported_or_retried_never_accepted_as_an_answer() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::fault(Fault::MalformedEvent), Step::text("recovered")],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--output-format",
        "json",
    ]));
    let result = result_json(&out);
    if out.status.success() {
        assert_eq!(result["result"], "recovered");
    } else {
        assert_eq!(result["subtype"], "error_during_execution");
        assert!(
            result["result"].as_str().unwrap().contains("127.0.0.1"),
            "{result}"
        );
    }
}

#[test]
fn persistent_overload_gives_up_after_a_few_attempts_naming_url_and_status() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", (0..10).map(|_| Step::fault(Fault::Overloaded)));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let result = result_json(&out);
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("529") && text.contains("/v1/messages"),
        "{text}"
    );
    let attempts = server.requests_for("lead").len();
    assert!(
        (2..=6).contains(&attempts),
        "bounded retries, got {attempts}"
    );
}

#[test]
fn unauthorized_is_not_retried_and_mentions_the_key() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::fault(Fault::Status {
            code: 401,
            retry_after: None,
            body:
                "{\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"
                    .into(),
        })],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "ANTHROPIC_API_KEY");
    assert_eq!(server.requests_for("lead").len(), 1);
}

#[test]
fn bad_request_is_not_retried() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::fault(Fault::Status {
            code: 400,
            retry_after: None,
            body: "{\"error\":{\"message\":\"bad field\"}}".into(),
        })],
    );
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("400"), "{}", stderr(&out));
    assert_eq!(server.requests_for("lead").len(), 1);
}

#[test]
fn prompt_too_long_is_recognised() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        server.script("lead", [Step::fault(Fault::PromptTooLong)]);
        let out = run(troupe(ws.path(), &server, wire).args(["-p", "x"]));
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).to_lowercase().contains("too long"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn connection_refused_fails_fast_with_a_clear_error() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env_remove("TROUPE_RETRY_BASE_MS")
        .args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&port.to_string()) && err.to_lowercase().contains("refused"),
        "{err}"
    );
    // Not a timed assertion of speed: a guard that no retry loop with real backoff ran.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_stream_of_pings_only_is_retried_then_reported_naming_the_idle_deadline() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let stall = || {
        Step::fault(Fault::KeepAliveOnly {
            every: Duration::from_millis(20),
            count: 3_000,
        })
    };
    // The default policy makes four attempts.
    server.script("lead", (0..4).map(|_| stall()));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_STREAM_IDLE_TIMEOUT_MS", "200")
        .args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_eq!(server.requests_for("lead").len(), 4);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}/v1/messages", server.url()))
            && err.contains("no content for 200ms")
            && err.contains("idle deadline"),
        "{err}"
    );
}
