//! The OpenAI Chat Completions wire: chunk streams and whole completions match the script.

use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Reply, Step, Wire};

use crate::support::{assemble_openai, post, request, sse_events, stream_text};

#[tokio::test]
async fn streamed_reply_reassembles_with_tool_calls_by_index() {
    let server = FakeServer::start();
    let input = json!({"command": "ls -la", "description": "list the files in the workspace"});
    server.script(
        "lead",
        [Step::reply(
            Reply::text("Looking around now.")
                .with_tool("bash", input.clone())
                .with_tool("glob", json!({"pattern": "**/*.rs"}))
                .usage(300, 40)
                .cache_usage(100, 0),
        )],
    );

    let m = assemble_openai(&sse_events(
        &stream_text(&server, Wire::OpenAi, "lead", "hi").await,
    ));

    assert!(m.done, "stream ends with [DONE]");
    assert_eq!(m.content, "Looking around now.");
    assert!(
        m.chunks
            .iter()
            .filter(|c| c["choices"][0]["delta"]["content"].is_string())
            .count()
            >= 3
    );
    assert_eq!(m.calls.len(), 2);
    assert!(m.calls[0].0.starts_with("call_"));
    assert_ne!(m.calls[0].0, m.calls[1].0);
    assert_eq!(m.calls[0].1, "bash");
    assert_eq!(serde_json::from_str::<Value>(&m.calls[0].2).unwrap(), input);
    assert_eq!(
        serde_json::from_str::<Value>(&m.calls[1].2).unwrap(),
        json!({"pattern": "**/*.rs"})
    );
    // Only the first fragment of a call carries its id and name; the arguments come in pieces.
    let fragments: Vec<&Value> = m
        .chunks
        .iter()
        .flat_map(|c| {
            c["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter(|tc| tc["index"] == 0)
        .collect();
    assert!(fragments.len() >= 3);
    assert_eq!(fragments[0]["type"], "function");
    assert!(fragments[1..]
        .iter()
        .all(|f| f.get("id").is_none() && f["function"].get("name").is_none()));
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
    // include_usage: a last chunk with no choices carries the usage.
    let last = m.chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    let usage = m.usage.unwrap();
    assert_eq!(usage["prompt_tokens"], 400);
    assert_eq!(usage["completion_tokens"], 40);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 100);
}

#[tokio::test]
async fn finish_reason_follows_the_reply_and_usage_needs_asking() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::reply(
                Reply::text("long answ")
                    .stop_max_tokens()
                    .with_thinking("hmm"),
            ),
            Step::text("short"),
        ],
    );
    let first = assemble_openai(&sse_events(
        &stream_text(&server, Wire::OpenAi, "lead", "a").await,
    ));
    assert_eq!(first.finish_reason.as_deref(), Some("length"));
    assert_eq!(first.content, "long answ");
    assert_eq!(first.reasoning, "hmm");

    let mut body = request(Wire::OpenAi, true, "b");
    body.as_object_mut().unwrap().remove("stream_options");
    let resp = post(&server, Wire::OpenAi, Some("lead"), &body).await;
    let second = assemble_openai(&sse_events(&resp.text().await.unwrap()));
    assert_eq!(second.finish_reason.as_deref(), Some("stop"));
    assert_eq!(second.content, "short");
    assert!(second.usage.is_none());
    assert!(second
        .chunks
        .iter()
        .all(|c| c["choices"].as_array().unwrap().len() == 1));
    assert!(second.done);
}

#[tokio::test]
async fn non_streaming_request_gets_one_completion_object() {
    let server = FakeServer::start();
    server.script("lead", [Step::tool("bash", json!({"command": "pwd"}))]);
    let resp = post(
        &server,
        Wire::OpenAi,
        None,
        &request(Wire::OpenAi, false, "hi"),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["name"],
        "bash"
    );
    let args = choice["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(args).unwrap(),
        json!({"command": "pwd"})
    );
}
