//! Each scripted fault, on both wires, as a client experiences it.

use serde_json::Value;
use troupe_testkit::{FakeServer, Fault, Step, Wire};

use crate::support::{post, request, sse_events};

/// Scripts one fault for the lead and sends a streaming request on `wire`.
async fn fault_response(fault: Fault, wire: Wire) -> (FakeServer, reqwest::Response) {
    let server = FakeServer::start();
    server.script("lead", [Step::fault(fault)]);
    let resp = post(&server, wire, None, &request(wire, true, "x")).await;
    (server, resp)
}

async fn json_body(resp: reqwest::Response) -> Value {
    serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn status_with_retry_after_wraps_text_in_the_wire_error_shape() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::Responses] {
        let (server, resp) = fault_response(Fault::rate_limited(7), wire).await;
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "7");
        let body = json_body(resp).await;
        match wire {
            Wire::Anthropic => assert_eq!(body["error"]["type"], "rate_limit_error"),
            Wire::OpenAi | Wire::Responses => {
                assert_eq!(body["error"]["code"], "rate_limit_exceeded")
            }
        }
        assert_eq!(body["error"]["message"], "fake server: rate limited");
        assert_eq!(server.journal().len(), 1, "faulted requests are journaled");
    }
}

#[tokio::test]
async fn status_with_a_json_body_sends_it_verbatim() {
    let fault = Fault::Status {
        code: 401,
        retry_after: None,
        body: r#"{"custom":true}"#.into(),
    };
    let (_server, resp) = fault_response(fault, Wire::Anthropic).await;
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().get("retry-after").is_none());
    assert_eq!(json_body(resp).await, serde_json::json!({"custom": true}));
}

#[tokio::test]
async fn overloaded_is_529_on_anthropic_and_503_on_openai() {
    let (_s, resp) = fault_response(Fault::Overloaded, Wire::Anthropic).await;
    assert_eq!(resp.status(), 529);
    assert_eq!(json_body(resp).await["error"]["type"], "overloaded_error");
    let (_s, resp) = fault_response(Fault::Overloaded, Wire::OpenAi).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(json_body(resp).await["error"]["type"], "server_error");
}

#[tokio::test]
async fn prompt_too_long_says_so_in_each_wire_shape() {
    let (_s, resp) = fault_response(Fault::PromptTooLong, Wire::Anthropic).await;
    assert_eq!(resp.status(), 400);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        "prompt is too long: 250000 tokens > 200000 maximum"
    );
    let (_s, resp) = fault_response(Fault::PromptTooLong, Wire::OpenAi).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_body(resp).await["error"]["code"],
        "context_length_exceeded"
    );
}

#[tokio::test]
async fn disconnect_mid_stream_delivers_a_prefix_then_fails_the_body() {
    for (wire, first_marker) in [
        (Wire::Anthropic, "event: message_start"),
        (Wire::OpenAi, "data: {"),
    ] {
        let (_s, mut resp) = fault_response(Fault::DisconnectMidStream, wire).await;
        assert_eq!(resp.status(), 200);
        let mut received = Vec::new();
        let outcome = loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => received.extend_from_slice(&bytes),
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        assert!(
            outcome.is_err(),
            "{wire:?}: the body must fail, not end cleanly"
        );
        let text = String::from_utf8(received).unwrap();
        assert!(text.starts_with(first_marker), "{wire:?}: {text}");
        assert!(
            text.contains("partial"),
            "{wire:?}: a delta arrives before the cut: {text}"
        );
        assert!(!text.contains("message_stop") && !text.contains("[DONE]"));
    }
}

#[tokio::test]
async fn a_malformed_event_carries_data_that_is_not_json() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (_s, resp) = fault_response(Fault::MalformedEvent, wire).await;
        assert_eq!(resp.status(), 200);
        let events = sse_events(&resp.text().await.unwrap());
        let bad: Vec<_> = events
            .iter()
            .filter(|e| serde_json::from_str::<Value>(&e.data).is_err())
            .collect();
        assert_eq!(bad.len(), 1, "{wire:?}: {events:?}");
        assert_eq!(
            bad[0].data,
            events.last().unwrap().data,
            "{wire:?}: the bad event comes last"
        );
    }
}

#[tokio::test]
async fn an_error_event_arrives_inside_a_200_stream() {
    let (_s, resp) = fault_response(Fault::ErrorEvent, Wire::Anthropic).await;
    assert_eq!(resp.status(), 200);
    let events = sse_events(&resp.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!(last.name.as_deref(), Some("error"));
    let data: Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(data["error"]["type"], "overloaded_error");
    assert!(events
        .iter()
        .all(|e| e.name.as_deref() != Some("message_stop")));

    let (_s, resp) = fault_response(Fault::ErrorEvent, Wire::OpenAi).await;
    assert_eq!(resp.status(), 200);
    let events = sse_events(&resp.text().await.unwrap());
    let data: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    assert_eq!(data["error"]["message"], "Overloaded");
    assert!(events.iter().all(|e| e.data != "[DONE]"));
}

#[tokio::test]
async fn keep_alive_only_streams_pings_or_comments_and_no_response() {
    let fault = || Fault::KeepAliveOnly {
        every: std::time::Duration::from_millis(1),
        count: 3,
    };
    let (_s, resp) = fault_response(fault(), Wire::Anthropic).await;
    assert_eq!(resp.status(), 200);
    let events = sse_events(&resp.text().await.unwrap());
    let names: Vec<_> = events.iter().map(|e| e.name.as_deref()).collect();
    assert_eq!(
        names,
        [
            Some("message_start"),
            Some("ping"),
            Some("ping"),
            Some("ping")
        ]
    );

    let (_s, resp) = fault_response(fault(), Wire::OpenAi).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert_eq!(text, ": keep-alive\n\n".repeat(3));
}

#[tokio::test]
async fn a_paced_step_streams_the_same_events_as_the_plain_one() {
    use troupe_testkit::{Reply, Step};
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let server = FakeServer::start();
        server.script(
            "lead",
            [
                Step::reply(Reply::text("same words")),
                Step::paced(
                    std::time::Duration::from_millis(2),
                    Step::reply(Reply::text("same words")),
                ),
            ],
        );
        let plain = crate::support::stream_text(&server, wire, "lead", "x").await;
        let paced = crate::support::stream_text(&server, wire, "lead", "x").await;
        let datas = |text: &str| -> Vec<Value> {
            sse_events(text)
                .iter()
                .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
                // Ids differ between the two replies; the shape and text must not.
                .map(|v| {
                    let mut v = v;
                    for key in ["id", "message"] {
                        if let Some(o) = v.as_object_mut() {
                            o.remove(key);
                        }
                    }
                    v
                })
                .collect()
        };
        assert_eq!(datas(&plain), datas(&paced), "{wire:?}");
    }
}

#[tokio::test]
async fn requests_over_the_context_limit_get_the_wires_own_refusal_and_play_no_step() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::Responses] {
        let server = FakeServer::start();
        server.script("lead", [Step::text("small enough")]);
        let big = request(wire, true, &"x".repeat(4_000));
        let limit = 500;
        server.set_context_limit(Some(limit));
        let resp = post(&server, wire, None, &big).await;
        assert_eq!(resp.status(), 400);
        let body = json_body(resp).await;
        let message = body["error"]["message"].as_str().unwrap().to_string();
        let sent = server.journal()[0].tokens();
        assert!(sent > limit);
        assert!(server.journal()[0].rejected_too_long);
        match wire {
            Wire::Anthropic => {
                assert_eq!(body["error"]["type"], "invalid_request_error");
                assert_eq!(
                    message,
                    format!("prompt is too long: {sent} tokens > {limit} maximum")
                );
            }
            Wire::OpenAi => {
                assert_eq!(body["error"]["code"], "context_length_exceeded");
                assert!(message.contains(&format!("maximum context length is {limit} tokens")));
                assert!(message.contains(&format!("resulted in {sent} tokens")));
            }
            Wire::Responses => {
                assert_eq!(body["error"]["code"], "context_length_exceeded");
                assert!(message.contains(&format!("({sent} tokens, limit {limit})")));
            }
        }
        assert_eq!(
            server.remaining("lead"),
            1,
            "a refused request plays no step"
        );
        let small = request(wire, true, "hi");
        let resp = post(&server, wire, None, &small).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(server.remaining("lead"), 0);
        assert!(!server.journal()[1].rejected_too_long);
    }
}
