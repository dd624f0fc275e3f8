//! The stream idle deadline, over real HTTP against the fake model server: a stream that only
//! sends keep-alives (Anthropic `ping`, OpenAI SSE comments) is abandoned and retried, then
//! fails with an error naming the URL and the deadline; a slow stream that keeps sending
//! content is never cut; a local OpenAI-compatible server's first token may take longer than
//! the idle deadline for a long prompt, but a gap between chunks may not.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use std::time::Duration;
use troupe_model::Configure;
use troupe_model::{
    AnthropicClient, Model, ModelError, ModelRequest, OpenAiClient, RetryPolicy, StreamEvent,
};
use troupe_protocol::{ChatMessage, ContentBlock};
use troupe_testkit::{FakeServer, Fault, Reply, Step, Wire};

const IDLE: Duration = Duration::from_millis(200);

fn client(server: &FakeServer, wire: Wire, attempts: u32) -> Box<dyn Model> {
    let retry = RetryPolicy {
        max_attempts: attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    match wire {
        Wire::Anthropic => Box::new(
            AnthropicClient::new(server.url(), Some("k".into()))
                .expect("client")
                .with_retry_policy(retry)
                .with_stream_idle_timeout(IDLE),
        ),
        Wire::OpenAi => Box::new(
            OpenAiClient::new(server.openai_url(), None)
                .expect("client")
                .with_retry_policy(retry)
                .with_stream_idle_timeout(IDLE),
        ),
        Wire::Responses => unreachable!("troupe has no Responses API client"),
    }
}

fn request() -> ModelRequest {
    request_with_system(String::new())
}

fn request_with_system(system: String) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: system.into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![].into(),
        max_tokens: 64,
        agent: "lead".into(),
        cache: None,
    }
}

async fn call(model: &dyn Model) -> support::Streamed {
    support::stream(model, &request()).await
}

/// Keep-alives every 20 ms for far longer than the deadline: only the deadline can end it.
fn keep_alive_only() -> Step {
    Step::fault(Fault::KeepAliveOnly {
        every: Duration::from_millis(20),
        count: 3_000,
    })
}

#[tokio::test]
async fn a_stream_of_keep_alives_only_is_retried_then_fails_naming_the_deadline() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let server = FakeServer::start();
        server.script(
            "lead",
            [keep_alive_only(), keep_alive_only(), keep_alive_only()],
        );
        let model = client(&server, wire, 3);
        let (result, events) = call(model.as_ref()).await;
        let retries = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Retrying { .. }))
            .count();
        assert_eq!(retries, 2, "{wire:?}: {events:?}");
        assert_eq!(server.journal().len(), 3, "{wire:?}");
        match result {
            Err(e @ ModelError::RetriesExhausted { .. }) => {
                let text = e.to_string();
                let url = match wire {
                    Wire::Anthropic => format!("{}/v1/messages", server.url()),
                    Wire::OpenAi => format!("{}/chat/completions", server.openai_url()),
                    Wire::Responses => unreachable!("troupe has no Responses API client"),
                };
                assert!(text.contains(&url), "{text}");
                // Anthropic's message_start counts as content, pings after it do not; the
                // OpenAI stream's comments come before any content: the first-content deadline
                // (the idle deadline, a little longer for a local server's prompt).
                let deadline = match wire {
                    Wire::Anthropic => "no content for 200ms between chunks",
                    Wire::OpenAi => "first-content deadline",
                    Wire::Responses => unreachable!("troupe has no Responses API client"),
                };
                assert!(
                    text.contains(deadline) && text.contains("TROUPE_STREAM_IDLE_TIMEOUT_MS"),
                    "{text}"
                );
            }
            other => panic!("{wire:?}: expected exhausted retries, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_stalled_attempt_is_retried_and_the_next_one_answers() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let server = FakeServer::start();
        server.script("lead", [keep_alive_only(), Step::text("after the stall")]);
        let model = client(&server, wire, 3);
        let (result, _) = call(model.as_ref()).await;
        let response = result.unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(
            response.content,
            vec![ContentBlock::text("after the stall")]
        );
    }
}

#[tokio::test]
async fn a_slow_stream_that_keeps_sending_content_is_not_cut() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let server = FakeServer::start();
        // Every event comes 60 ms after the previous one: the stream's ten-odd events take
        // several deadlines in all, but no gap between content events reaches one.
        let long = "a slow but steady answer, piece by piece";
        server.script(
            "lead",
            [Step::paced(
                Duration::from_millis(60),
                Step::reply(Reply::text(long)),
            )],
        );
        let model = client(&server, wire, 1);
        let (result, events) = call(model.as_ref()).await;
        let response = result.unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(response.content.first(), Some(&ContentBlock::text(long)));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::Retrying { .. })),
            "{wire:?}: {events:?}"
        );
    }
}

/// A prompt of some 20 000 tokens: a local server may take eleven idle deadlines (2.2 s here)
/// to read it before its first token.
fn long_prompt() -> ModelRequest {
    request_with_system("You read slowly. ".repeat(4_700))
}

#[tokio::test]
async fn a_local_servers_first_token_may_come_later_than_the_idle_deadline_for_a_long_prompt() {
    let server = FakeServer::start();
    // The answer starts 700 ms after the request: well past the 200 ms idle deadline, well
    // within the first-content deadline of this prompt.
    server.script(
        "lead",
        [Step::delay(
            Duration::from_millis(700),
            Step::text("read it all"),
        )],
    );
    let model = client(&server, Wire::OpenAi, 1);
    let (result, events) = support::stream(model.as_ref(), &long_prompt()).await;
    let response = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.content, vec![ContentBlock::text("read it all")]);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { .. })),
        "{events:?}"
    );
    assert_eq!(
        server.journal().len(),
        1,
        "asked once, not again from scratch"
    );
}

#[tokio::test]
async fn after_the_first_content_a_gap_longer_than_the_idle_deadline_is_a_stall() {
    let server = FakeServer::start();
    // 700 ms between events: the first is within the long prompt's first-content deadline,
    // the gap after it is not within the idle deadline.
    server.script(
        "lead",
        [Step::paced(
            Duration::from_millis(700),
            Step::reply(Reply::text("a b c d e f g h")),
        )],
    );
    let model = client(&server, Wire::OpenAi, 1);
    let (result, _) = support::stream(model.as_ref(), &long_prompt()).await;
    match result {
        Err(e @ ModelError::RetriesExhausted { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("no content for 200ms between chunks"),
                "{text}"
            );
        }
        other => panic!("expected the gap to end the attempt, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_gets_no_longer_first_content_deadline() {
    // The API sends message_start at once and pings while it reads: a long prompt gives no
    // extra time to a response that does not start.
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::delay(
            Duration::from_millis(700),
            Step::text("too late"),
        )],
    );
    let model = client(&server, Wire::Anthropic, 1);
    let (result, _) = support::stream(model.as_ref(), &long_prompt()).await;
    let text = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("no content for 200ms after the request"),
        "{text}"
    );
}
