//! A minimal client for the fake server and SSE reassemblers written independently of it.

use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Wire};

/// Posts `body` to the wire's endpoint, as `agent` when given.
pub async fn post(
    server: &FakeServer,
    wire: Wire,
    agent: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let url = match wire {
        Wire::Anthropic => format!("{}/v1/messages", server.url()),
        Wire::OpenAi => format!("{}/chat/completions", server.openai_url()),
        Wire::Responses => format!("{}/responses", server.openai_url()),
    };
    let mut req = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(agent) = agent {
        req = req.header("x-troupe-agent", agent);
    }
    req.send().await.unwrap()
}

/// A reqwest client; reqwest is built without a crypto provider, so ring is installed first.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A small request body in the wire's shape.
pub fn request(wire: Wire, stream: bool, user_text: &str) -> Value {
    match wire {
        Wire::Anthropic => json!({
            "model": "claude-test", "max_tokens": 1024, "stream": stream, "system": "be brief",
            "messages": [{"role": "user", "content": user_text}],
            "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
        }),
        Wire::OpenAi => json!({
            "model": "gpt-test", "stream": stream, "stream_options": {"include_usage": true},
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": user_text}],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
        }),
        Wire::Responses => json!({
            "model": "gpt-test", "stream": stream, "instructions": "be brief",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": user_text}]}],
            "tools": [{"type": "function", "name": "bash", "parameters": {"type": "object"}}],
        }),
    }
}

/// Sends a default streaming request and returns its whole body as text.
pub async fn stream_text(server: &FakeServer, wire: Wire, agent: &str, user_text: &str) -> String {
    let resp = post(server, wire, Some(agent), &request(wire, true, user_text)).await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

/// One server-sent event: its `event:` name (if any) and its data.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

/// Splits an SSE body into events.
pub fn sse_events(text: &str) -> Vec<Event> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        if block.trim().is_empty() {
            continue;
        }
        let mut name = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event: ") {
                name = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v);
            } else {
                panic!("unexpected SSE line {line:?}");
            }
        }
        out.push(Event {
            name,
            data: data.join("\n"),
        });
    }
    out
}

/// An Anthropic stream put back together.
#[derive(Debug, Default)]
pub struct AnthropicMessage {
    pub names: Vec<String>,
    pub blocks: Vec<Value>,
    pub stop_reason: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// How many input_json_delta events each block received.
    pub json_fragments: Vec<usize>,
}

/// Reassembles an Anthropic event stream the way a client must.
pub fn assemble_anthropic(events: &[Event]) -> AnthropicMessage {
    let mut m = AnthropicMessage::default();
    let mut partial: Vec<String> = Vec::new();
    for ev in events {
        let data: Value = serde_json::from_str(&ev.data).unwrap();
        let name = ev.name.clone().unwrap();
        assert_eq!(
            data["type"],
            name.as_str(),
            "event name and data type agree"
        );
        m.names.push(name.clone());
        let index = data["index"].as_u64().unwrap_or(0) as usize;
        match name.as_str() {
            "message_start" => {
                m.input_tokens = data["message"]["usage"]["input_tokens"].as_u64().unwrap()
            }
            "content_block_start" => {
                assert_eq!(index, m.blocks.len(), "blocks open in order");
                m.blocks.push(data["content_block"].clone());
                partial.push(String::new());
                m.json_fragments.push(0);
            }
            "content_block_delta" => {
                let d = &data["delta"];
                let block = &mut m.blocks[index];
                match d["type"].as_str().unwrap() {
                    "text_delta" => {
                        block["text"] = json!(format!(
                            "{}{}",
                            block["text"].as_str().unwrap(),
                            d["text"].as_str().unwrap()
                        ))
                    }
                    "thinking_delta" => {
                        block["thinking"] = json!(format!(
                            "{}{}",
                            block["thinking"].as_str().unwrap(),
                            d["thinking"].as_str().unwrap()
                        ))
                    }
                    "signature_delta" => block["signature"] = d["signature"].clone(),
                    "input_json_delta" => {
                        partial[index].push_str(d["partial_json"].as_str().unwrap());
                        m.json_fragments[index] += 1;
                    }
                    other => panic!("unknown delta {other}"),
                }
            }
            "content_block_stop" => {
                if m.blocks[index]["type"] == "tool_use" {
                    m.blocks[index]["input"] = serde_json::from_str(&partial[index]).unwrap();
                }
            }
            "message_delta" => {
                m.stop_reason = data["delta"]["stop_reason"].as_str().unwrap().to_string();
                m.output_tokens = data["usage"]["output_tokens"].as_u64().unwrap();
            }
            "ping" | "message_stop" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    m
}

/// An OpenAI chunk stream put back together.
#[derive(Debug, Default)]
pub struct OpenAiMessage {
    pub chunks: Vec<Value>,
    pub content: String,
    pub reasoning: String,
    /// (id, name, arguments) by index.
    pub calls: Vec<(String, String, String)>,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
    pub done: bool,
}

/// Reassembles an OpenAI chunk stream, accumulating tool calls by index.
pub fn assemble_openai(events: &[Event]) -> OpenAiMessage {
    let mut m = OpenAiMessage::default();
    for ev in events {
        assert!(ev.name.is_none(), "OpenAI events are unnamed");
        assert!(!m.done, "nothing follows [DONE]");
        if ev.data == "[DONE]" {
            m.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(&ev.data).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if !chunk["usage"].is_null() {
            m.usage = Some(chunk["usage"].clone());
        }
        if let Some(choice) = chunk["choices"].as_array().unwrap().first() {
            let d = &choice["delta"];
            if let Some(s) = d["content"].as_str() {
                m.content.push_str(s);
            }
            if let Some(s) = d["reasoning_content"].as_str() {
                m.reasoning.push_str(s);
            }
            for call in d["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap() as usize;
                if index == m.calls.len() {
                    m.calls.push(Default::default());
                }
                let slot = &mut m.calls[index];
                if let Some(id) = call["id"].as_str() {
                    slot.0 = id.to_string();
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    slot.1.push_str(name);
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    slot.2.push_str(args);
                }
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                m.finish_reason = Some(f.to_string());
            }
        }
        m.chunks.push(chunk);
    }
    m
}
