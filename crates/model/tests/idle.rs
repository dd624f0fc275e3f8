//! The stream idle deadline, over real HTTP against the fake model server: a stream that only
//! sends keep-alives (Anthropic `ping`, OpenAI SSE comments) is abandoned and retried, then
//! fails with an error naming the URL and the deadline; a slow stream that keeps sending
//! content is never cut.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use std::time::Duration;
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
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: String::new(),
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
                };
                assert!(text.contains(&url), "{text}");
                assert!(
                    text.contains("no content for 200ms")
                        && text.contains("idle deadline")
                        && text.contains("TROUPE_STREAM_IDLE_TIMEOUT_MS"),
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
