//! The OpenAI Responses API wire (Codex CLI's): the event stream carries the script's text and
//! function calls, and a follow-up request's `function_call_output` reads back as a tool result.

use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Reply, Step, Wire};

use crate::support::{post, request, sse_events, stream_text};

#[tokio::test]
async fn streamed_reply_carries_text_and_function_calls_then_completes() {
    let server = FakeServer::start();
    let input = json!({"command": "ls"});
    server.script(
        "lead",
        [Step::reply(
            Reply::text("Looking.").with_tool("bash", input.clone()),
        )],
    );

    let events = sse_events(&stream_text(&server, Wire::Responses, "lead", "hi").await);
    let datas: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    for (e, d) in events.iter().zip(&datas) {
        assert_eq!(e.name.as_deref(), d["type"].as_str(), "event name = type");
    }
    assert_eq!(datas[0]["type"], "response.created");
    let last = datas.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert!(last["response"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let text: String = datas
        .iter()
        .filter(|d| d["type"] == "response.output_text.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Looking.");
    let done: Vec<&Value> = datas
        .iter()
        .filter(|d| d["type"] == "response.output_item.done")
        .map(|d| &d["item"])
        .collect();
    assert_eq!(done.len(), 2);
    assert_eq!(done[0]["type"], "message");
    assert_eq!(done[0]["content"][0]["text"], "Looking.");
    assert_eq!(done[1]["type"], "function_call");
    assert_eq!(done[1]["name"], "bash");
    assert!(done[1]["call_id"].as_str().unwrap().starts_with("call_"));
    let args: Value = serde_json::from_str(done[1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, input);
}

#[tokio::test]
async fn function_call_output_reads_back_as_the_last_tool_result() {
    let server = FakeServer::start();
    server.script("lead", [Step::text("done")]);
    let mut body = request(Wire::Responses, false, "list the files");
    body["input"].as_array_mut().unwrap().extend([
        json!({"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "Cargo.toml\nsrc"}),
    ]);
    let resp = post(&server, Wire::Responses, None, &body).await;
    assert_eq!(resp.status(), 200);
    let whole: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(whole["status"], "completed");
    assert_eq!(whole["output"][0]["content"][0]["text"], "done");

    let rec = &server.journal()[0];
    assert_eq!(rec.wire, Wire::Responses);
    assert_eq!(rec.system(), "be brief");
    assert_eq!(rec.tool_names(), ["bash"]);
    assert_eq!(
        rec.last_tool_result(),
        Some(("Cargo.toml\nsrc".to_string(), false))
    );
    let messages = rec.messages();
    assert_eq!(
        messages.len(),
        3,
        "user, assistant call, user result: {messages:?}"
    );
}
