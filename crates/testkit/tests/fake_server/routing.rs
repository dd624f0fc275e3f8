//! Per-agent scripts, dynamic steps, the journal, exhaustion, keep-alive and concurrency.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Fault, Reply, Step, Wire};

use crate::support::{assemble_anthropic, assemble_openai, post, request, sse_events, stream_text};

fn anthropic_text(body: &str) -> String {
    let m = assemble_anthropic(&sse_events(body));
    m.blocks.iter().filter_map(|b| b["text"].as_str()).collect()
}

#[tokio::test]
async fn each_agent_plays_its_own_script_and_lead_is_the_default() {
    let server = FakeServer::start();
    server.script("lead", [Step::text("lead one"), Step::text("lead two")]);
    server.script("alice", [Step::text("alice one")]);
    server.script("bob", [Step::text("bob one")]);
    assert_eq!(server.remaining("lead"), 2);

    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "alice", "x").await),
        "alice one"
    );
    let resp = post(
        &server,
        Wire::Anthropic,
        None,
        &request(Wire::Anthropic, true, "x"),
    )
    .await;
    assert_eq!(anthropic_text(&resp.text().await.unwrap()), "lead one");
    // The same agent may use either wire; its queue is shared.
    let m = assemble_openai(&sse_events(
        &stream_text(&server, Wire::OpenAi, "lead", "y").await,
    ));
    assert_eq!(m.content, "lead two");
    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "bob", "z").await),
        "bob one"
    );

    assert_eq!(
        (
            server.remaining("lead"),
            server.remaining("alice"),
            server.remaining("bob")
        ),
        (0, 0, 0)
    );
    let lead = server.requests_for("lead");
    assert_eq!(lead.len(), 2);
    assert_eq!(lead[0].wire, Wire::Anthropic);
    assert_eq!(lead[1].wire, Wire::OpenAi);
    assert_eq!(lead[1].path, "/v1/chat/completions");
    assert_eq!(server.requests_for("alice")[0].all_text(), "be brief\nx");
}

#[tokio::test]
async fn a_dynamic_step_reads_the_request_it_answers() {
    let server = FakeServer::start();
    server.script(
        "alice",
        [Step::dynamic(|rec| {
            let text = rec.messages().last().map(|m| m.text()).unwrap_or_default();
            let request_id = text
                .strip_prefix("shutdown request ")
                .unwrap_or("missing")
                .to_string();
            Reply::tool(
                "shutdown_response",
                json!({"request_id": request_id, "approve": true}),
            )
        })],
    );
    let text = stream_text(&server, Wire::Anthropic, "alice", "shutdown request req_42").await;
    let m = assemble_anthropic(&sse_events(&text));
    assert_eq!(
        m.blocks[0]["input"],
        json!({"request_id": "req_42", "approve": true})
    );
}

#[tokio::test]
async fn the_journal_records_every_request_in_order_faults_included() {
    let server = FakeServer::start();
    server.script("lead", [Step::fault(Fault::Overloaded), Step::text("ok")]);
    let first = post(
        &server,
        Wire::Anthropic,
        Some("lead"),
        &request(Wire::Anthropic, true, "one"),
    )
    .await;
    assert_eq!(first.status(), 529);
    stream_text(&server, Wire::OpenAi, "lead", "two").await;
    let third = post(
        &server,
        Wire::Anthropic,
        Some("carol"),
        &request(Wire::Anthropic, true, "three"),
    )
    .await;
    assert_eq!(third.status(), 400);

    let journal = server.journal();
    let seen: Vec<(&str, Wire, String)> = journal
        .iter()
        .map(|r| (r.agent.as_str(), r.wire, r.messages()[0].text()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("lead", Wire::Anthropic, "one".to_string()),
            ("lead", Wire::OpenAi, "two".to_string()),
            ("carol", Wire::Anthropic, "three".to_string()),
        ]
    );
    assert_eq!(journal[0].header("X-Troupe-Agent"), Some("lead"));
    assert_eq!(journal[0].header("content-type"), Some("application/json"));
    assert_eq!(journal[1].body["model"], "gpt-test");
    assert_eq!(journal[0].tool_names(), vec!["bash"]);
    assert!(journal[0].at <= journal[1].at && journal[1].at <= journal[2].at);
}

#[tokio::test]
async fn an_exhausted_script_answers_a_loud_400_on_both_wires() {
    let server = FakeServer::start();
    let resp = post(
        &server,
        Wire::Anthropic,
        Some("dave"),
        &request(Wire::Anthropic, true, "x"),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        "fake server: no scripted step left for agent 'dave'"
    );

    let resp = post(
        &server,
        Wire::OpenAi,
        None,
        &request(Wire::OpenAi, true, "x"),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(
        body["error"]["message"],
        "fake server: no scripted step left for agent 'lead'"
    );
}

#[tokio::test]
async fn the_fallback_answers_when_a_queue_is_empty() {
    let server = FakeServer::start();
    server.script("lead", [Step::text("scripted")]);
    server.set_fallback(|rec| Step::text(&format!("fallback for {}", rec.agent)));
    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "lead", "x").await),
        "scripted"
    );
    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "lead", "x").await),
        "fallback for lead"
    );
    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "erin", "x").await),
        "fallback for erin"
    );
}

#[tokio::test]
async fn a_panicking_script_becomes_a_400_naming_the_panic() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::dynamic(|_| panic!("expected an inbox message"))],
    );
    let resp = post(
        &server,
        Wire::Anthropic,
        None,
        &request(Wire::Anthropic, true, "x"),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("expected an inbox message"), "{message}");
}

#[tokio::test]
async fn a_delayed_step_answers_with_its_inner_step() {
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::delay(Duration::from_millis(20), Step::text("late")),
            Step::delay(Duration::from_millis(1), Step::fault(Fault::status(500))),
        ],
    );
    assert_eq!(
        anthropic_text(&stream_text(&server, Wire::Anthropic, "lead", "x").await),
        "late"
    );
    let resp = post(
        &server,
        Wire::Anthropic,
        None,
        &request(Wire::Anthropic, true, "x"),
    )
    .await;
    assert_eq!(resp.status(), 500);
}

#[tokio::test]
async fn unknown_paths_are_404_and_not_journaled() {
    let server = FakeServer::start();
    let resp = super::support::client()
        .post(format!("{}/v1/embeddings", server.url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(server.journal().is_empty());
}

#[tokio::test]
async fn a_hundred_agents_at_once_each_get_their_own_answers() {
    let server = std::sync::Arc::new(FakeServer::start());
    for i in 0..100 {
        let agent = format!("agent{i}");
        server.script(
            &agent,
            [
                Step::text(&format!("{agent} first")),
                Step::text(&format!("{agent} second")),
            ],
        );
    }
    let mut tasks = Vec::new();
    for i in 0..100 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let agent = format!("agent{i}");
            let wire = if i % 2 == 0 {
                Wire::Anthropic
            } else {
                Wire::OpenAi
            };
            let mut got = Vec::new();
            for _ in 0..2 {
                let text = stream_text(&server, wire, &agent, "go").await;
                got.push(match wire {
                    Wire::Anthropic => anthropic_text(&text),
                    Wire::OpenAi => assemble_openai(&sse_events(&text)).content,
                    Wire::Responses => unreachable!("only the two troupe wires here"),
                });
            }
            (agent, got)
        }));
    }
    for task in tasks {
        let (agent, got) = task.await.unwrap();
        assert_eq!(
            got,
            vec![format!("{agent} first"), format!("{agent} second")]
        );
    }
    assert_eq!(server.journal().len(), 200);
}

/// Reads one HTTP/1.1 response with a chunked body from a blocking stream; returns
/// (status line, body, how many data chunks it came in).
fn read_chunked_response(reader: &mut BufReader<TcpStream>) -> (String, String, usize) {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut chunked = false;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        chunked |= line.eq_ignore_ascii_case("transfer-encoding: chunked\r\n");
    }
    assert!(chunked, "streams are sent chunked");
    let mut body = Vec::new();
    let mut chunks = 0;
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut chunk = vec![0; n + 2];
        reader.read_exact(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        chunks += 1;
        body.extend_from_slice(&chunk[..n]);
    }
    (status, String::from_utf8(body).unwrap(), chunks)
}

/// Sends one Anthropic request on `writer` (it plays the lead's next step).
fn send_request(writer: &mut TcpStream) {
    let body = request(Wire::Anthropic, true, "hi").to_string();
    write!(
        writer,
        "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
}

/// A plain (non-async) test: two requests on one keep-alive connection, the second sent only
/// after the first streamed answer has been read completely.
#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = FakeServer::start();
    server.script("lead", [Step::text("first"), Step::text("second")]);
    let stream = TcpStream::connect(server.addr()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    for expected in ["first", "second"] {
        send_request(&mut writer);
        let (status, text, chunks) = read_chunked_response(&mut reader);
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        assert_eq!(anthropic_text(&text), expected);
        assert!(
            chunks > 1,
            "each event is flushed on its own: {chunks} chunk(s)"
        );
    }
    assert_eq!(server.journal().len(), 2);
}

/// With whole answers, a stream still comes chunked, but in one piece; a paced one still
/// comes event by event.
#[test]
fn whole_answers_come_in_one_chunk_unless_paced() {
    let server = FakeServer::start();
    server.set_whole_answers(true);
    server.script(
        "lead",
        [
            Step::text("at once"),
            Step::Paced(Duration::from_millis(1), Box::new(Step::text("paced"))),
        ],
    );
    let stream = TcpStream::connect(server.addr()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    send_request(&mut writer);
    let (status, text, chunks) = read_chunked_response(&mut reader);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(anthropic_text(&text), "at once");
    assert_eq!(chunks, 1);
    send_request(&mut writer);
    let (_, text, chunks) = read_chunked_response(&mut reader);
    assert_eq!(anthropic_text(&text), "paced");
    assert!(chunks > 1, "a paced answer keeps its pieces: {chunks}");
}

#[test]
fn dropping_the_server_closes_its_port() {
    let server = FakeServer::start();
    let addr = server.addr();
    assert!(TcpStream::connect(addr).is_ok());
    drop(server);
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after drop"
    );
}
