//! Unit tests of the Chat Completions message mapping and delta accumulation (no HTTP).

use super::*;
use crate::http::assemble;
use crate::ToolSpec;

fn sse(chunks: &[&str]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
}

/// Text in pieces, then two tool calls whose arguments arrive in fragments (id and name only
/// in the first), a finish chunk, the usage chunk with no choices, and `[DONE]`.
fn full_stream() -> String {
    sse(&[
        r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"check — ok"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"a.txt\"}"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":60}}}"#,
        "[DONE]",
    ])
}

#[test]
fn accumulates_text_and_tool_calls_by_index_at_any_chunk_size() {
    let raw = full_stream();
    for chunk in [1, 3, 50, 100_000] {
        let (result, events) = assemble(OpenAiAssembler::new(), raw.as_bytes(), chunk);
        let response = result.unwrap_or_else(|f| panic!("chunk {chunk}: {f:?}"));
        assert_eq!(
            response.content,
            vec![
                ContentBlock::text("Let me check — ok"),
                ContentBlock::ToolUse {
                    id: "call_a".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"})
                },
                ContentBlock::ToolUse {
                    id: "call_b".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a.txt"})
                },
            ],
            "chunk {chunk}"
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 20,
                cache_read_input_tokens: 60,
                cache_creation_input_tokens: 0,
                estimated: false,
            }
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Let me ".into()),
                StreamEvent::TextDelta("check — ok".into()),
                StreamEvent::ToolUseStart {
                    id: "call_a".into(),
                    name: "bash".into()
                },
                StreamEvent::ToolUseStart {
                    id: "call_b".into(),
                    name: "read_file".into()
                },
            ]
        );
    }
}

#[test]
fn missing_ids_are_generated_consistently_and_reasoning_is_streamed_not_kept() {
    let raw = sse(&[
        r#"{"choices":[{"delta":{"reasoning_content":"thinking..."}}]}"#,
        r#"{"choices":[{"delta":{"reasoning":" more"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"glob","arguments":"{\"pattern\""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"*.rs\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
    ]);
    // No [DONE]: a finish_reason is enough.
    let (result, events) = assemble(OpenAiAssembler::new(), raw.as_bytes(), 7);
    let response = result.unwrap_or_else(|f| panic!("{f:?}"));
    let [ContentBlock::ToolUse { id, name, input }] = response.content.as_slice() else {
        panic!("expected one tool call, got {:?}", response.content);
    };
    assert!(id.starts_with("call_") && id.ends_with("_0"), "{id}");
    assert_eq!(name, "glob");
    assert_eq!(input, &json!({"pattern": "*.rs"}));
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("thinking...".into()),
            StreamEvent::ThinkingDelta(" more".into()),
            StreamEvent::ToolUseStart {
                id: id.clone(),
                name: "glob".into()
            },
        ]
    );
}

#[test]
fn tolerates_missing_fields_and_odd_chunks() {
    let raw = sse(&[
        r#"{}"#,
        r#"{"choices":[]}"#,
        r#"{"choices":[{}]}"#,
        r#"{"choices":[{"delta":null}]}"#,
        r#"{"choices":[{"delta":{"content":null,"tool_calls":null}}]}"#,
        r#"{"choices":[{"delta":{"content":"hi"}}],"usage":null}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]);
    let (result, _) = assemble(OpenAiAssembler::new(), raw.as_bytes(), 4);
    let response = result.unwrap_or_else(|f| panic!("{f:?}"));
    assert_eq!(response.content, vec![ContentBlock::text("hi")]);
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.usage, Usage::default());
}

#[test]
fn a_stream_without_finish_or_done_is_incomplete() {
    let raw = sse(&[r#"{"choices":[{"delta":{"content":"half an ans"}}]}"#]);
    let (result, _) = assemble(OpenAiAssembler::new(), raw.as_bytes(), 1000);
    assert!(matches!(result, Err(Fault::Incomplete(_))), "{result:?}");
}

/// An assembler for a request offering one tool.
fn with_tools() -> OpenAiAssembler {
    OpenAiAssembler::for_request(&ModelRequest {
        model: "m".into(),
        system: "".into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: json!({}).into(),
        }]
        .into(),
        max_tokens: 10,
        agent: "lead".into(),
        cache: None,
    })
}

#[test]
fn with_tools_an_empty_or_unfinished_stream_means_streaming_is_unsupported() {
    // llama.cpp: a 200 stream that closes with nothing in it.
    let (result, _) = assemble(with_tools(), b"", 1000);
    assert!(
        matches!(result, Err(Fault::StreamingUnsupported(ref r)) if r.contains("without sending anything")),
        "{result:?}"
    );
    // Or with `[DONE]` only, or content but no finish_reason.
    let (result, _) = assemble(with_tools(), sse(&["[DONE]"]).as_bytes(), 1000);
    assert!(
        matches!(result, Err(Fault::StreamingUnsupported(_))),
        "{result:?}"
    );
    let raw = sse(&[r#"{"choices":[{"delta":{"content":"half"}}]}"#]);
    let (result, _) = assemble(with_tools(), raw.as_bytes(), 1000);
    assert!(
        matches!(result, Err(Fault::StreamingUnsupported(ref r)) if r.contains("without finish_reason")),
        "{result:?}"
    );
    // Without tools the same streams stay what they were: retried, or an empty answer.
    let (result, _) = assemble(OpenAiAssembler::new(), b"", 1000);
    assert!(matches!(result, Err(Fault::Incomplete(_))), "{result:?}");
    let (result, _) = assemble(OpenAiAssembler::new(), sse(&["[DONE]"]).as_bytes(), 1000);
    assert!(result.is_ok(), "{result:?}");
    // A whole answer with tools is not affected.
    let raw = sse(&[r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#]);
    let (result, _) = assemble(with_tools(), raw.as_bytes(), 1000);
    assert!(result.is_ok(), "{result:?}");
}

#[test]
fn a_refusal_to_stream_tools_is_recognised_only_with_tools() {
    let message = "Cannot use tools with stream";
    assert!(matches!(
        with_tools().refusal(message),
        Some(Fault::StreamingUnsupported(ref r)) if r.contains(message)
    ));
    assert!(with_tools()
        .refusal("streaming is not supported with function calling")
        .is_some());
    assert_eq!(with_tools().refusal("The server is overloaded"), None);
    assert_eq!(OpenAiAssembler::new().refusal(message), None);
    // The same refusal as an error chunk inside the stream.
    let raw = sse(&[
        r#"{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}"#,
    ]);
    let (result, _) = assemble(with_tools(), raw.as_bytes(), 1000);
    assert!(
        matches!(result, Err(Fault::StreamingUnsupported(_))),
        "{result:?}"
    );
}

#[test]
fn error_chunks_and_bad_json_are_faults() {
    let raw = sse(&[
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ]);
    let (result, _) = assemble(OpenAiAssembler::new(), raw.as_bytes(), 1000);
    assert_eq!(
        result.err(),
        Some(Fault::Provider {
            kind: "invalid_request_error".into(),
            message: "This model's maximum context length is 4096 tokens".into()
        })
    );
    let (result, _) = assemble(OpenAiAssembler::new(), b"data: {nope\n\n", 1000);
    assert!(matches!(result, Err(Fault::Malformed(_))), "{result:?}");
}

#[test]
fn invalid_arguments_are_kept_raw() {
    let raw = sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{\"command\": "}}]},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    let (result, _) = assemble(OpenAiAssembler::new(), raw.as_bytes(), 1000);
    let response = result.unwrap_or_else(|f| panic!("{f:?}"));
    assert_eq!(
        response.content,
        vec![ContentBlock::ToolUse {
            id: "c".into(),
            name: "bash".into(),
            input: json!({crate::INVALID_TOOL_INPUT_KEY: "{\"command\": "})
        }]
    );
}

#[test]
fn maps_the_conversation_to_chat_messages() {
    let messages = vec![
        ChatMessage::user_text("list files"),
        ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: Some("s".into()),
                },
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                },
            ],
        },
        ChatMessage {
            role: Role::User,
            content: vec![
                ContentBlock::tool_result("call_1", "a.txt", false),
                ContentBlock::text("also: mail from bob"),
            ],
        },
        ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text("Trying."),
                ContentBlock::ToolUse {
                    id: "call_2".into(),
                    name: "bash".into(),
                    input: json!({}),
                },
            ],
        },
        ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::tool_result("call_2", "no such file", true)],
        },
        ChatMessage::assistant_text("Done."),
    ];
    let mapped = map_messages("sys", &messages);
    assert_eq!(
        Value::Array(mapped),
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            {"role": "user", "content": "also: mail from bob"},
            {"role": "assistant", "content": "Trying.", "tool_calls": [
                {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            {"role": "assistant", "content": "Done."},
        ])
    );
    assert_eq!(map_messages("", &messages[..1]).len(), 1);
}

/// The body `request` is sent with, parsed back.
fn body_value(request: &ModelRequest, reading: Reading) -> Value {
    let bytes = request_body(
        request,
        reading,
        &ToolsJson::default(),
        false,
        None,
        ToolChoice::Auto,
    )
    .unwrap_or_else(|e| panic!("cannot encode: {e}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON: {e}"))
}

#[test]
fn request_body_asks_for_a_stream_with_usage_and_function_tools() {
    let request = ModelRequest {
        model: "gpt-4o-mini".into(),
        system: "".into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![ToolSpec {
            name: "glob".into(),
            description: "find files".into(),
            input_schema:
                json!({"title": "G", "properties": {"n": {"type": "integer", "format": "uint32"}}})
                    .into(),
        }]
        .into(),
        max_tokens: 300,
        agent: "alice".into(),
        cache: None,
    };
    let body = body_value(&request, Reading::Stream);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "glob",
            "description": "find files",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}
        }}])
    );
    // llama.cpp's server leaves the tools out of the prompt without it.
    assert_eq!(body["tool_choice"], "auto");
    let whole = body_value(&request, Reading::Whole);
    assert_eq!(whole["stream"], false);
    assert!(whole.get("stream_options").is_none(), "{whole}");
    assert_eq!(whole["tool_choice"], "auto");
    let no_tools = body_value(
        &ModelRequest {
            tools: vec![].into(),
            ..request
        },
        Reading::Stream,
    );
    assert!(no_tools.get("tools").is_none());
    assert!(no_tools.get("tool_choice").is_none());
}

#[test]
fn a_required_tool_choice_is_sent_with_the_tools_only() {
    let request = ModelRequest {
        model: "local".into(),
        system: "".into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            input_schema: json!({"type": "object"}).into(),
        }]
        .into(),
        max_tokens: 10,
        agent: "lead".into(),
        cache: None,
    };
    let body = |request: &ModelRequest| -> Value {
        let bytes = request_body(
            request,
            Reading::Stream,
            &ToolsJson::default(),
            false,
            None,
            ToolChoice::Required,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(body(&request)["tool_choice"], "required");
    let no_tools = ModelRequest {
        tools: Vec::<crate::ToolSpec>::new().into(),
        ..request
    };
    assert!(body(&no_tools).get("tool_choice").is_none());
}

#[test]
fn prompt_images_are_image_url_parts_after_the_text() {
    let image = troupe_protocol::ImageData {
        media_type: "image/png".into(),
        data: "AAAA".into(),
    };
    let messages = [ChatMessage::user_with_images("what is this?", vec![image])];
    assert_eq!(
        map_messages("", &messages),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]})]
    );
}

#[test]
fn tool_result_images_follow_the_tool_messages_as_image_url_parts() {
    let image = troupe_protocol::ImageData {
        media_type: "image/png".into(),
        data: "AAAA".into(),
    };
    let messages = [ChatMessage {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "shot".into(),
                is_error: false,
                images: vec![image],
            },
            ContentBlock::tool_result("call_2", "plain", false),
            ContentBlock::text("and more"),
        ],
    }];
    let mapped = map_messages("", &messages);
    assert_eq!(mapped.len(), 3, "{mapped:#?}");
    assert_eq!(
        mapped[0]["content"],
        "shot\n[1 image(s) returned; shown in the next message]"
    );
    assert_eq!(mapped[1]["content"], "plain");
    assert_eq!(
        mapped[2],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Image(s) returned by tool call call_1:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "and more"},
        ]})
    );
}

#[test]
fn openai_itself_gets_a_prompt_cache_key_shared_by_a_tool_set() {
    assert!(is_openai("https://api.openai.com/v1"));
    assert!(!is_openai("http://localhost:11434/v1"));
    assert!(!is_openai("https://api.openai.com.example.org/v1"));
    let client = OpenAiClient::new("https://api.openai.com/v1", None)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_prompt_cache(crate::PromptCache::default());
    assert!(client.cache_key);
    let local = OpenAiClient::new("http://127.0.0.1:8080/v1", None)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_prompt_cache(crate::PromptCache::default());
    assert!(!local.cache_key);

    let marks = crate::CacheMarks {
        shared_end: 6,
        stable_end: 12,
    };
    let request = |system: &str| ModelRequest {
        model: "gpt-4o".into(),
        system: system.into(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: Vec::<crate::ToolSpec>::new().into(),
        max_tokens: 10,
        agent: "alice".into(),
        cache: Some(marks),
    };
    let key = |system: &str| {
        let bytes = request_body(
            &request(system),
            Reading::Stream,
            &ToolsJson::default(),
            true,
            None,
            ToolChoice::Auto,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
        body["prompt_cache_key"].as_str().map(str::to_owned)
    };
    // Two agents differing only after the shared part name the same cache.
    let alice = key("SHARED You are alice");
    assert!(alice.as_deref().is_some_and(|k| k.starts_with("troupe-")));
    assert_eq!(alice, key("SHARED You are bob.."));
    assert_ne!(alice, key("OTHER! You are alice"));
}
