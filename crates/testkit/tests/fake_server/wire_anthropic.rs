//! The Anthropic Messages wire: streamed and whole replies reassemble to the script.

use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Reply, Step, Wire};

use crate::support::{assemble_anthropic, post, request, sse_events, stream_text};

#[tokio::test]
async fn streamed_reply_reassembles_to_the_scripted_blocks() {
    let server = FakeServer::start();
    let big_input = json!({"command": "cargo test --workspace", "timeout": 120, "env": {"A": "é"}});
    server.script(
        "lead",
        [Step::reply(
            Reply::text("Let me run the tests.")
                .with_tool("bash", big_input.clone())
                .with_tool("read_file", json!({"path": "src/lib.rs"}))
                .with_thinking("I should check the tests first.")
                .usage(1234, 56),
        )],
    );

    let m = assemble_anthropic(&sse_events(
        &stream_text(&server, Wire::Anthropic, "lead", "hi").await,
    ));

    assert_eq!(m.names.first().map(String::as_str), Some("message_start"));
    assert_eq!(m.names.last().map(String::as_str), Some("message_stop"));
    assert_eq!(m.names[m.names.len() - 2], "message_delta");
    assert!(m.names.iter().any(|n| n == "ping"));
    assert_eq!(m.blocks.len(), 4);
    // Thinking is streamed first even though it was added last.
    assert_eq!(m.blocks[0]["type"], "thinking");
    assert_eq!(m.blocks[0]["thinking"], "I should check the tests first.");
    assert!(!m.blocks[0]["signature"].as_str().unwrap().is_empty());
    assert_eq!(
        m.blocks[1],
        json!({"type": "text", "text": "Let me run the tests."})
    );
    assert_eq!(m.blocks[2]["name"], "bash");
    assert_eq!(m.blocks[2]["input"], big_input);
    assert_eq!(m.blocks[3]["input"], json!({"path": "src/lib.rs"}));
    // The tool input arrives in several fragments, as the real API sends it.
    assert!(
        m.json_fragments[2] >= 3,
        "fragments: {:?}",
        m.json_fragments
    );
    let (id_a, id_b) = (
        m.blocks[2]["id"].as_str().unwrap(),
        m.blocks[3]["id"].as_str().unwrap(),
    );
    assert!(id_a.starts_with("toolu_") && id_b.starts_with("toolu_"));
    assert_ne!(id_a, id_b);
    assert_eq!(m.stop_reason, "tool_use");
    assert_eq!((m.input_tokens, m.output_tokens), (1234, 56));
}

#[tokio::test]
async fn stop_reason_follows_the_reply() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::text("all done"),
            Step::reply(Reply::text("cut off mid").stop_max_tokens()),
        ],
    );
    let first = assemble_anthropic(&sse_events(
        &stream_text(&server, Wire::Anthropic, "lead", "a").await,
    ));
    assert_eq!(first.stop_reason, "end_turn");
    assert_eq!(
        first.blocks,
        vec![json!({"type": "text", "text": "all done"})]
    );
    // Without scripted usage the server still reports plausible, non-zero counts.
    assert!(first.input_tokens > 0 && first.output_tokens > 0);
    let second = assemble_anthropic(&sse_events(
        &stream_text(&server, Wire::Anthropic, "lead", "b").await,
    ));
    assert_eq!(second.stop_reason, "max_tokens");
    assert_eq!(second.blocks[0]["text"], "cut off mid");
}

#[tokio::test]
async fn tool_ids_are_unique_across_replies() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::tool("bash", json!({})), Step::tool("bash", json!({}))],
    );
    let a = assemble_anthropic(&sse_events(
        &stream_text(&server, Wire::Anthropic, "lead", "a").await,
    ));
    let b = assemble_anthropic(&sse_events(
        &stream_text(&server, Wire::Anthropic, "lead", "b").await,
    ));
    assert_eq!(a.blocks[0]["input"], json!({}));
    assert_ne!(a.blocks[0]["id"], b.blocks[0]["id"]);
}

#[tokio::test]
async fn non_streaming_request_gets_one_message_object() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::reply(
            Reply::text("hello").with_tool("bash", json!({"command": "ls"})),
        )],
    );
    let resp = post(
        &server,
        Wire::Anthropic,
        None,
        &request(Wire::Anthropic, false, "hi"),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["content"][0], json!({"type": "text", "text": "hello"}));
    assert_eq!(body["content"][1]["input"], json!({"command": "ls"}));
    assert_eq!(body["stop_reason"], "tool_use");
}
