//! The clients over real HTTP against a scripted local responder: request shape, retries,
//! Retry-After, cut streams, and errors that must not be retried.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use serde_json::json;
use std::time::Duration;
use support::{closed_port_url, Reply, Server};
use troupe_model::Configure;
use troupe_model::{
    AnthropicClient, Model, ModelError, ModelRequest, OpenAiClient, RetryPolicy, StopReason,
    StreamEvent, ToolSpec,
};
use troupe_protocol::{ChatMessage, ContentBlock};

/// Tiny waits so retries cost nothing; the cap is what clamps Retry-After.
fn fast_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(40),
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "You are terse.".into(),
        messages: vec![ChatMessage::user_text("hello")],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run a command".into(),
            input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}})
                .into(),
        }]
        .into(),
        max_tokens: 512,
        agent: "alice".into(),
        cache: None,
    }
}

fn anthropic(base_url: &str, attempts: u32) -> AnthropicClient {
    AnthropicClient::new(base_url, Some("sk-ant-test".into()))
        .expect("client")
        .with_agent_header(true)
        .with_retry_policy(fast_policy(attempts))
}

fn openai(base_url: &str, key: Option<&str>, attempts: u32) -> OpenAiClient {
    OpenAiClient::new(format!("{base_url}/v1"), key.map(str::to_owned))
        .expect("client")
        .with_agent_header(true)
        .with_retry_policy(fast_policy(attempts))
}

/// Runs one call, collecting the live events.
async fn run(model: &dyn Model) -> support::Streamed {
    support::stream(model, &request()).await
}

fn anthropic_text_stream(text: &str) -> String {
    format!(
        concat!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":9,\"output_tokens\":1}}}}}}\n\n",
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n",
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n",
            "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":4}}}}\n\n",
            "event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
        ),
        text
    )
}

fn openai_text_stream(text: &str) -> String {
    format!(
        concat!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"{}\"}}}}]}}\n\n",
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n",
            "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":11,\"completion_tokens\":3}}}}\n\n",
            "data: [DONE]\n\n",
        ),
        text
    )
}

fn retry_waits(events: &[StreamEvent]) -> Vec<(u32, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                attempt, wait_ms, ..
            } => Some((*attempt, *wait_ms)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn anthropic_sends_the_documented_request_and_returns_the_answer() {
    let server = Server::start(vec![Reply::sse(anthropic_text_stream("Hi there"))]).await;
    let (result, events) = run(&anthropic(&server.base_url, 4)).await;
    let response = result.expect("response");
    assert_eq!(response.content, vec![ContentBlock::text("Hi there")]);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (9, 4)
    );
    assert_eq!(events, vec![StreamEvent::TextDelta("Hi there".into())]);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("x-troupe-agent"), Some("alice"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.body["model"], "test-model");
    assert_eq!(req.body["system"], "You are terse.");
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["tools"][0]["name"], "bash");
    assert_eq!(req.body["messages"][0]["content"][0]["text"], "hello");
}

#[tokio::test]
async fn a_real_provider_never_learns_the_agent_name() {
    let server = Server::start(vec![
        Reply::sse(anthropic_text_stream("one")),
        Reply::sse(openai_text_stream("two")),
    ])
    .await;
    let anthropic = AnthropicClient::new(server.base_url.as_str(), Some("k".into()))
        .expect("client")
        .with_retry_policy(fast_policy(1));
    let openai = OpenAiClient::new(format!("{}/v1", server.base_url), None)
        .expect("client")
        .with_retry_policy(fast_policy(1));
    run(&anthropic).await.0.expect("anthropic answers");
    run(&openai).await.0.expect("openai answers");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for req in &requests {
        assert_eq!(req.header("x-troupe-agent"), None, "{}", req.request_line);
    }
}

#[tokio::test]
async fn openai_sends_bearer_only_with_a_key() {
    let server = Server::start(vec![
        Reply::sse(openai_text_stream("one")),
        Reply::sse(openai_text_stream("two")),
    ])
    .await;
    let (with_key, _) = run(&openai(&server.base_url, Some("sk-oa"), 1)).await;
    let (without_key, _) = run(&openai(&server.base_url, None, 1)).await;
    assert_eq!(
        with_key.expect("first").content,
        vec![ContentBlock::text("one")]
    );
    let second = without_key.expect("second");
    assert_eq!(second.content, vec![ContentBlock::text("two")]);
    assert_eq!(second.usage.input_tokens, 11);

    let requests = server.requests();
    assert_eq!(
        requests[0].request_line,
        "POST /v1/chat/completions HTTP/1.1"
    );
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-oa"));
    assert_eq!(requests[1].header("authorization"), None);
    assert_eq!(requests[1].header("x-troupe-agent"), Some("alice"));
    assert_eq!(
        requests[1].body["messages"],
        json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}])
    );
    assert_eq!(requests[1].body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    let server = Server::start(vec![
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Reply::sse(anthropic_text_stream("after retry")),
    ])
    .await;
    let (result, events) = run(&anthropic(&server.base_url, 4)).await;
    assert_eq!(
        result.expect("response").content,
        vec![ContentBlock::text("after retry")]
    );
    assert_eq!(server.requests().len(), 2);
    let StreamEvent::Retrying {
        attempt, reason, ..
    } = &events[0]
    else {
        panic!("first event should announce the retry: {events:?}");
    };
    assert_eq!(*attempt, 1);
    assert!(
        reason.contains("529") && reason.contains("Overloaded"),
        "{reason}"
    );
}

#[tokio::test]
async fn retry_after_headers_set_the_wait_clamped_to_the_cap() {
    let server = Server::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "30"),
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "3"),
        Reply::sse(anthropic_text_stream("ok")),
    ])
    .await;
    let (result, events) = run(&anthropic(&server.base_url, 4)).await;
    assert!(result.is_ok(), "{result:?}");
    // 30 s is clamped to the 40 ms cap; 3 ms is taken as given.
    assert_eq!(retry_waits(&events), vec![(1, 40), (2, 3)]);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_retried() {
    let full = anthropic_text_stream("whole");
    let cut = full.split("event: message_delta").next().expect("prefix");
    let server = Server::start(vec![Reply::sse(cut), Reply::sse(full.clone())]).await;
    let (result, events) = run(&anthropic(&server.base_url, 4)).await;
    assert_eq!(
        result.expect("response").content,
        vec![ContentBlock::text("whole")]
    );
    assert_eq!(server.requests().len(), 2);
    assert!(events.iter().any(|e| matches!(e,
        StreamEvent::Retrying { reason, .. } if reason.contains("message_stop"))));
}

#[tokio::test]
async fn a_connection_dropped_mid_body_is_retried() {
    let server = Server::start(vec![
        Reply::sse_cut("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n"),
        Reply::sse(openai_text_stream("complete")),
    ])
    .await;
    let (result, events) = run(&openai(&server.base_url, None, 3)).await;
    assert_eq!(
        result.expect("response").content,
        vec![ContentBlock::text("complete")]
    );
    assert_eq!(retry_waits(&events).len(), 1);
    // The transport error itself, not the missing finish_reason, triggered the retry.
    assert!(
        events.iter().any(|e| matches!(e,
        StreamEvent::Retrying { reason, .. } if reason.contains("broke off"))),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_overloaded_error_event_inside_the_stream_is_retried() {
    let overloaded = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let server = Server::start(vec![
        Reply::sse(overloaded),
        Reply::sse(anthropic_text_stream("fine")),
    ])
    .await;
    let (result, _) = run(&anthropic(&server.base_url, 2)).await;
    assert_eq!(
        result.expect("response").content,
        vec![ContentBlock::text("fine")]
    );
}

#[tokio::test]
async fn persistent_server_errors_exhaust_the_attempts() {
    let server = Server::start(vec![
        Reply::status(503, "unavailable"),
        Reply::status(500, r#"{"error":{"message":"boom"}}"#),
        Reply::status(502, "bad gateway"),
        Reply::sse(openai_text_stream("never reached")),
    ])
    .await;
    let (result, events) = run(&openai(&server.base_url, None, 3)).await;
    match result {
        Err(ModelError::RetriesExhausted {
            attempts,
            last_error,
            url,
        }) => {
            assert_eq!(attempts, 3);
            assert!(last_error.contains("502"), "{last_error}");
            assert!(url.ends_with("/v1/chat/completions"), "{url}");
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        retry_waits(&events)
            .iter()
            .map(|(a, _)| *a)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[tokio::test]
async fn a_stream_with_neither_finish_nor_done_exhausts_the_attempts() {
    let half = "data: {\"choices\":[{\"delta\":{\"content\":\"half\"}}]}\n\n";
    let server = Server::start(vec![Reply::sse(half), Reply::sse(half)]).await;
    // Without tools: a cut stream is retried. (With tools it means the server cannot stream
    // them, and the client asks without streaming: see openai_fallback.rs.)
    let no_tools = ModelRequest {
        tools: Vec::new().into(),
        ..request()
    };
    let (result, _) = support::stream(&openai(&server.base_url, None, 2), &no_tools).await;
    assert!(
        matches!(
            result,
            Err(ModelError::RetriesExhausted { attempts: 2, .. })
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn connection_refused_fails_at_once_without_retrying() {
    let url = closed_port_url().await;
    for model in [
        Box::new(anthropic(&url, 4)) as Box<dyn Model>,
        Box::new(openai(&url, None, 4)),
    ] {
        let (result, events) = run(model.as_ref()).await;
        match result {
            Err(ref err @ ModelError::ConnectionRefused { ref url }) => {
                assert!(url.starts_with("http://127.0.0.1:"), "{url}");
                assert!(err.to_string().contains("is the server running?"));
            }
            other => panic!("expected ConnectionRefused, got {other:?}"),
        }
        assert!(events.is_empty(), "no retry may be announced: {events:?}");
    }
}

#[tokio::test]
async fn auth_failures_are_not_retried_and_name_the_key_variable() {
    let server = Server::start(vec![
        Reply::status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
        Reply::status(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
        ),
    ])
    .await;
    let (anthropic_result, anthropic_events) = run(&anthropic(&server.base_url, 4)).await;
    let (openai_result, _) = run(&openai(&server.base_url, Some("bad"), 4)).await;
    assert!(matches!(anthropic_result,
        Err(ModelError::Auth { status: 401, ref key_var, ref message, .. })
            if key_var == "ANTHROPIC_API_KEY" && message == "invalid x-api-key"));
    assert!(matches!(openai_result,
        Err(ModelError::Auth { ref key_var, .. }) if key_var == "OPENAI_API_KEY"));
    assert!(anthropic_events.is_empty());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn prompt_too_long_and_other_4xx_are_reported_without_retry() {
    let server = Server::start(vec![
        Reply::status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ),
        Reply::status(
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}"#,
        ),
    ])
    .await;
    let (first, _) = run(&anthropic(&server.base_url, 4)).await;
    let (second, _) = run(&anthropic(&server.base_url, 4)).await;
    assert!(
        first.as_ref().is_err_and(ModelError::is_prompt_too_long),
        "{first:?}"
    );
    assert!(
        matches!(second, Err(ModelError::Http { status: 404, ref message, .. }) if message == "model: nope"),
        "{second:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_tool_calls_round_trip_over_http() {
    let stream = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"pwd\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let server = Server::start(vec![Reply::sse(stream)]).await;
    let (result, events) = run(&openai(&server.base_url, None, 1)).await;
    let response = result.expect("response");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.content,
        vec![ContentBlock::ToolUse {
            id: "call_9".into(),
            name: "bash".into(),
            input: json!({"command": "pwd"})
        }]
    );
    assert_eq!(
        events,
        vec![StreamEvent::ToolUseStart {
            id: "call_9".into(),
            name: "bash".into()
        }]
    );
}
