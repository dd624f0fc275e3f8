//! The OpenAI-compatible client against the testkit's reproduction of llama.cpp's server (not a
//! real llama.cpp): a request with tools that the server cannot stream is asked again without
//! streaming, and so is every later one, with one notice; requests without tools keep
//! streaming; a stream without usage gets an estimate, marked; a stream cut after content is
//! still retried as a stream.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use std::time::Duration;
use troupe_model::Configure;
use troupe_model::{
    Model, ModelRequest, OpenAiClient, RetryPolicy, StopReason, StreamEvent, ToolSpec,
};
use troupe_protocol::{ChatMessage, ContentBlock};
use troupe_testkit::{FakeServer, Fault, OpenAiQuirks, Reply, Step, ToolStreaming};

fn client(server: &FakeServer) -> OpenAiClient {
    OpenAiClient::new(server.openai_url(), None)
        .expect("client")
        .with_retry_policy(RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        })
}

fn request(tools: bool) -> ModelRequest {
    ModelRequest {
        model: "smollm2".into(),
        system: "You are terse.".into(),
        messages: vec![ChatMessage::user_text("list the files")],
        tools: if tools {
            vec![ToolSpec {
                name: "bash".into(),
                description: "Run a command".into(),
                input_schema:
                    json!({"type": "object", "properties": {"command": {"type": "string"}}}).into(),
            }]
            .into()
        } else {
            Vec::new().into()
        },
        max_tokens: 256,
        agent: "lead".into(),
        cache: None,
    }
}

/// One call: its outcome and the live events it gave.
async fn call(
    model: &OpenAiClient,
    request: &ModelRequest,
) -> (troupe_model::ModelResponse, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let response = model
        .stream(request, &mut |e| events.push(e))
        .await
        .unwrap_or_else(|e| panic!("call failed: {e}"));
    (response, events)
}

fn streams(server: &FakeServer) -> Vec<bool> {
    server
        .journal()
        .iter()
        .map(|r| r.body["stream"].as_bool().unwrap_or(false))
        .collect()
}

fn notices(events: &[StreamEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Notice(_)))
        .count()
}

#[tokio::test]
async fn tool_requests_fall_back_once_and_stay_whole_while_plain_ones_stream() {
    let server = FakeServer::start();
    server.set_openai_quirks(OpenAiQuirks::llama_cpp());
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "ls"})),
            Step::text("plain"),
            Step::reply(Reply::text("again").with_tool("bash", json!({"command": "pwd"}))),
        ],
    );
    let model = client(&server);

    let (first, events) = call(&model, &request(true)).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert!(matches!(
        &first.content[0],
        ContentBlock::ToolUse { name, input, .. } if name == "bash" && input == &json!({"command": "ls"})
    ));
    assert_eq!(notices(&events), 1, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { .. })),
        "{events:?}"
    );
    // The whole answer still shows its tool call starting.
    assert!(events
        .iter()
        .any(|e| matches!(e, StreamEvent::ToolUseStart { name, .. } if name == "bash")));
    // The whole answer's usage is the server's own.
    assert!(!first.usage.estimated);

    // Without tools: streamed, and with no usage in the stream, estimated.
    let (plain, events) = call(&model, &request(false)).await;
    assert_eq!(plain.content, vec![ContentBlock::text("plain")]);
    assert!(plain.usage.estimated);
    assert!(plain.usage.input_tokens > 0 && plain.usage.output_tokens > 0);
    assert_eq!(notices(&events), 0);

    // With tools again: whole at once, nothing said again.
    let (third, events) = call(&model, &request(true)).await;
    assert_eq!(third.content.len(), 2);
    assert_eq!(notices(&events), 0);
    assert_eq!(streams(&server), [true, false, true, false]);

    // A clone is the same client for this: it goes whole at once too.
    server.script("lead", [Step::text("clone")]);
    let (_, events) = call(&model.clone(), &request(true)).await;
    assert_eq!(notices(&events), 0);
    assert_eq!(streams(&server).last(), Some(&false));
}

#[tokio::test]
async fn a_stream_cut_after_content_is_retried_as_a_stream() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::fault(Fault::DisconnectMidStream), Step::text("whole")],
    );
    let model = client(&server);
    let (response, events) = call(&model, &request(true)).await;
    assert_eq!(response.content, vec![ContentBlock::text("whole")]);
    assert_eq!(notices(&events), 0);
    assert!(events
        .iter()
        .any(|e| matches!(e, StreamEvent::Retrying { .. })));
    assert_eq!(streams(&server), [true, true]);
}

#[tokio::test]
async fn an_explicit_refusal_falls_back_without_retrying() {
    for quirk in [ToolStreaming::Refused, ToolStreaming::NoFinishReason] {
        let server = FakeServer::start();
        server.set_openai_quirks(OpenAiQuirks {
            tool_streaming: quirk,
            ..OpenAiQuirks::default()
        });
        server.script("lead", [Step::text("fine")]);
        let (response, events) = call(&client(&server), &request(true)).await;
        assert_eq!(
            response.content,
            vec![ContentBlock::text("fine")],
            "{quirk:?}"
        );
        assert_eq!(notices(&events), 1, "{quirk:?}");
        assert_eq!(streams(&server), [true, false], "{quirk:?}");
    }
}
