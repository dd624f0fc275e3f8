//! Unit tests of the Anthropic request body and stream assembly (no HTTP).

use super::*;
use crate::body::ToolsJson;
use crate::http::assemble;
use crate::Reasoning;
use crate::{ToolSpec, INVALID_TOOL_INPUT_KEY};
use serde_json::json;
use troupe_protocol::ChatMessage;

/// A stream as the API sends it: thinking, text, a tool call split into fragments.
const FULL_STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1,\"cache_read_input_tokens\":7,\"cache_creation_input_tokens\":3}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"look.\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2lnbmF0dXJl\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: ping\n",
    "data: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Listing \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"files — ok\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"comm\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"and\\\": \\\"ls -la\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

fn expected_content() -> Vec<ContentBlock> {
    vec![
        ContentBlock::Thinking {
            thinking: "Let me look.".into(),
            signature: Some("c2lnbmF0dXJl".into()),
        },
        ContentBlock::text("Listing files — ok"),
        ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "bash".into(),
            input: json!({"command": "ls -la"}),
        },
    ]
}

#[test]
fn assembles_thinking_text_and_tool_use_at_any_chunk_size() {
    for chunk in [1, 2, 7, 64, 100_000] {
        let (result, events) =
            assemble(AnthropicAssembler::default(), FULL_STREAM.as_bytes(), chunk);
        let response = result.unwrap_or_else(|f| panic!("chunk {chunk}: {f:?}"));
        assert_eq!(response.content, expected_content(), "chunk {chunk}");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 25,
                output_tokens: 42,
                cache_read_input_tokens: 7,
                cache_creation_input_tokens: 3,
                estimated: false,
            }
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::ThinkingDelta("Let me ".into()),
                StreamEvent::ThinkingDelta("look.".into()),
                StreamEvent::TextDelta("Listing ".into()),
                StreamEvent::TextDelta("files — ok".into()),
                StreamEvent::ToolUseStart {
                    id: "toolu_1".into(),
                    name: "bash".into()
                },
            ]
        );
    }
}

#[test]
fn a_stream_cut_before_message_stop_is_incomplete() {
    let cut = FULL_STREAM
        .split("event: message_delta")
        .next()
        .unwrap_or_default();
    let (result, _) = assemble(AnthropicAssembler::default(), cut.as_bytes(), 16);
    assert!(matches!(result, Err(Fault::Incomplete(_))), "{result:?}");
}

fn stream_of(events: &[&str]) -> String {
    let mut out = String::from("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n");
    for data in events {
        out.push_str("data: ");
        out.push_str(data);
        out.push_str("\n\n");
    }
    out
}

#[test]
fn tool_input_empty_means_empty_object_and_invalid_json_is_kept_raw() {
    let raw = stream_of(&[
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"list","input":{}}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"bash","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let (result, _) = assemble(AnthropicAssembler::default(), raw.as_bytes(), 1000);
    let response = result.unwrap_or_else(|f| panic!("{f:?}"));
    assert_eq!(
        response.content,
        vec![
            ContentBlock::ToolUse {
                id: "a".into(),
                name: "list".into(),
                input: json!({})
            },
            ContentBlock::ToolUse {
                id: "b".into(),
                name: "bash".into(),
                input: json!({INVALID_TOOL_INPUT_KEY: "{\"command\": \"ls"})
            },
        ]
    );
}

#[test]
fn redacted_thinking_is_kept_and_empty_text_dropped_and_unknown_blocks_ignored() {
    let raw = stream_of(&[
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EncRypted"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"s","name":"web_search"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let (result, _) = assemble(AnthropicAssembler::default(), raw.as_bytes(), 3);
    let response = result.unwrap_or_else(|f| panic!("{f:?}"));
    assert_eq!(
        response.content,
        vec![ContentBlock::RedactedThinking {
            data: "EncRypted".into()
        }]
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

#[test]
fn error_event_becomes_a_provider_fault() {
    let raw = stream_of(&[
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ]);
    let (result, _) = assemble(AnthropicAssembler::default(), raw.as_bytes(), 5);
    assert_eq!(
        result.err(),
        Some(Fault::Provider {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        })
    );
}

#[test]
fn non_json_data_is_malformed() {
    let raw = "event: message_start\ndata: {oops\n\n";
    let (result, _) = assemble(AnthropicAssembler::default(), raw.as_bytes(), 5);
    assert!(matches!(result, Err(Fault::Malformed(_))), "{result:?}");
}

#[test]
fn maps_stop_reasons() {
    assert_eq!(stop_reason("max_tokens"), StopReason::MaxTokens);
    assert_eq!(stop_reason("stop_sequence"), StopReason::StopSequence);
    assert_eq!(stop_reason("refusal"), StopReason::Refusal);
    assert_eq!(
        stop_reason("pause_turn"),
        StopReason::Other("pause_turn".into())
    );
}

/// The body `request` is sent with, parsed back.
fn body_value(request: &ModelRequest) -> Value {
    let bytes = request_body(
        request,
        &ToolsJson::default(),
        PromptCache::default(),
        Reasoning::default(),
    )
    .unwrap_or_else(|e| panic!("cannot encode: {e}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON: {e}"))
}

#[test]
fn request_body_has_the_messages_api_shape() {
    let request = ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "be brief".into(),
        messages: vec![
            ChatMessage::user_text("hi"),
            ChatMessage {
                role: troupe_protocol::Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                }],
            },
            ChatMessage {
                role: troupe_protocol::Role::User,
                content: vec![ContentBlock::tool_result("t1", "a.txt", false)],
            },
        ],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: json!({"$schema": "x", "title": "BashInput", "type": "object", "properties": {"command": {"type": "string"}}}).into(),
        }].into(),
        max_tokens: 1024,
        agent: "lead".into(),
        cache: None,
    };
    let body = body_value(&request);
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "t1");
    assert_eq!(body["messages"][2]["content"][0]["content"], "a.txt");
    assert_eq!(
        body["tools"][0],
        json!({"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}})
    );

    let bare = body_value(&ModelRequest {
        system: "".into(),
        tools: vec![].into(),
        ..request
    });
    assert!(bare.get("system").is_none() && bare.get("tools").is_none());
}

#[test]
fn tool_result_images_become_image_blocks_after_the_text() {
    let image = troupe_protocol::ImageData {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let request = ModelRequest {
        model: "m".into(),
        system: "".into(),
        messages: vec![ChatMessage {
            role: troupe_protocol::Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "a screenshot".into(),
                    is_error: false,
                    images: vec![image.clone()],
                },
                ContentBlock::ToolResult {
                    tool_use_id: "t2".into(),
                    content: String::new(),
                    is_error: true,
                    images: vec![image],
                },
                ContentBlock::tool_result("t3", "plain", false),
            ],
        }],
        tools: vec![].into(),
        max_tokens: 1,
        agent: "lead".into(),
        cache: None,
    };
    let body = body_value(&request);
    let blocks = &body["messages"][0]["content"];
    assert_eq!(
        blocks[0],
        json!({"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "a screenshot"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        ]})
    );
    assert_eq!(blocks[1]["is_error"], true);
    assert_eq!(
        blocks[1]["content"].as_array().unwrap().len(),
        1,
        "no empty text block"
    );
    assert!(blocks[1].get("images").is_none());
    assert_eq!(blocks[2]["content"], "plain");
}

#[test]
fn prompt_images_go_as_image_blocks_after_the_text() {
    let image = troupe_protocol::ImageData {
        media_type: "image/jpeg".into(),
        data: "/9j/4AAQ".into(),
    };
    let request = ModelRequest {
        model: "m".into(),
        system: "".into(),
        messages: vec![ChatMessage::user_with_images("what is this?", vec![image])],
        tools: vec![].into(),
        max_tokens: 1,
        agent: "lead".into(),
        cache: None,
    };
    let body = body_value(&request);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
        ])
    );
}

#[test]
fn caching_marks_the_system_parts_and_the_newest_message() {
    let system = format!("{}{}", "s".repeat(6_000), "Date: today");
    let request = ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: system.into(),
        messages: vec![ChatMessage::user_text("hello")],
        tools: Vec::<ToolSpec>::new().into(),
        max_tokens: 100,
        agent: "lead".into(),
        cache: Some(crate::CacheMarks {
            shared_end: 6_000,
            stable_end: 6_000,
        }),
    };
    let body = body_value(&request);
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["system"][0]["text"].as_str().map(str::len),
        Some(6_000)
    );
    assert_eq!(
        body["system"][1],
        json!({"type": "text", "text": "Date: today"})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );

    let hour = request_body(
        &request,
        &ToolsJson::default(),
        PromptCache {
            enabled: true,
            ttl: CacheTtl::OneHour,
        },
        Reasoning::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let hour: Value = serde_json::from_slice(&hour).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        hour["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );

    // Off: the system prompt is one string and nothing carries a breakpoint.
    let off = request_body(
        &request,
        &ToolsJson::default(),
        PromptCache::OFF,
        Reasoning::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&off);
    assert!(!text.contains("cache_control"), "{text}");
    let off: Value = serde_json::from_slice(&off).unwrap_or_else(|e| panic!("{e}"));
    assert!(off["system"].is_string());
}
