//! The streamable HTTP transport against a scripted HTTP/1.1 server: the headers of each
//! `POST`, the session id and protocol version once given, a JSON answer, an event-stream
//! answer, a `tools/list_changed` on the `GET` stream outside any request, and the session
//! deleted when the session is dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use super::*;
use crate::rpc::{Session, Signals};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request the server saw.
#[derive(Debug)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
}

/// The scripted server's memory: sessions given so far, and whether the first one expired.
#[derive(Default)]
struct Script {
    sessions: AtomicUsize,
    first_expired: AtomicBool,
}

/// Serves one request per connection (each answer closes it), reporting each to `seen`.
async fn serve(listener: TcpListener, seen: mpsc::UnboundedSender<Seen>, script: Arc<Script>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let (seen, script) = (seen.clone(), script.clone());
        tokio::spawn(async move { answer(socket, seen, &script).await });
    }
}

async fn answer(socket: TcpStream, seen: mpsc::UnboundedSender<Seen>, script: &Script) {
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    let method = line.split(' ').next().unwrap().to_string();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.unwrap();
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers
        .get("content-length")
        .map_or(0, |l| l.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rpc = body["method"].as_str().unwrap_or("").to_string();
    let id = body["id"].clone();
    let expired = script.first_expired.load(Ordering::SeqCst)
        && headers.get(SESSION_ID).map(String::as_str) == Some("s1");
    let refused = headers.contains_key("x-refuse");
    seen.send(Seen {
        method: method.clone(),
        headers,
        body,
    })
    .unwrap();
    let mut socket = reader.into_inner();
    let reply = |status: &str, kind: &str, extra: &str, body: &str| {
        format!("HTTP/1.1 {status}\r\ncontent-type: {kind}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
    };
    let text = match (method.as_str(), rpc.as_str()) {
        ("POST", _) if refused => reply(
            "400 Bad Request",
            "application/json",
            "",
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: no"}})
                .to_string(),
        ),
        ("POST", _) if expired => reply("404 Not Found", "text/plain", "", "no such session"),
        ("GET", _) if expired => reply("404 Not Found", "text/plain", "", ""),
        ("POST", "initialize") => reply(
            "200 OK",
            "application/json",
            &format!(
                "mcp-session-id: s{}\r\n",
                script.sessions.fetch_add(1, Ordering::SeqCst) + 1
            ),
            &json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "1"},
            }})
            .to_string(),
        ),
        ("POST", "tools/call") => reply(
            "200 OK",
            "text/event-stream",
            "",
            &format!(
                "id: 1\nevent: message\ndata: {}\n\n: more\n\nid: 2\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "done"}]}}),
            ),
        ),
        ("POST", _) => reply("202 Accepted", "application/json", "", ""),
        ("GET", _) => {
            // An open stream: headers, one notification, then nothing until the test ends.
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            socket.write_all(head.as_bytes()).await.unwrap();
            let event = format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            );
            socket.write_all(event.as_bytes()).await.unwrap();
            socket.flush().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        _ => reply("200 OK", "text/plain", "", ""),
    };
    socket.write_all(text.as_bytes()).await.unwrap();
    socket.shutdown().await.unwrap();
}

async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the server saw nothing")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_streamable_http() {
    crate::connection::install_crypto();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, mut seen) = mpsc::unbounded_channel();
    tokio::spawn(serve(listener, tx, Arc::default()));
    let headers = BTreeMap::from([("X-Client".to_string(), "troupe".to_string())]);
    let signals = Arc::new(Signals::default());
    let session = Session::new(link(&url, &headers).unwrap(), signals.clone());

    let info = session.initialize().await.unwrap();
    assert_eq!(info.protocol_version, "2025-06-18");
    let init = next(&mut seen).await;
    assert_eq!(init.method, "POST");
    assert_eq!(init.body["method"], "initialize");
    assert_eq!(init.headers["accept"], ACCEPT_BOTH);
    assert_eq!(init.headers["content-type"], "application/json");
    assert_eq!(init.headers["x-client"], "troupe");
    assert!(!init.headers.contains_key(SESSION_ID));
    let initialized = next(&mut seen).await;
    assert_eq!(initialized.body["method"], "notifications/initialized");
    assert_eq!(initialized.headers[SESSION_ID], "s1");
    assert_eq!(initialized.headers[PROTOCOL_VERSION], "2025-06-18");

    // The GET stream opens after the handshake and brings a list change of its own.
    let get = next(&mut seen).await;
    assert_eq!(get.method, "GET");
    assert_eq!(get.headers[SESSION_ID], "s1");
    assert!(get.headers["accept"].contains("text/event-stream"));
    for _ in 0..100 {
        if signals.list_changes.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(signals.list_changes.load(Ordering::SeqCst), 1);

    // An event-stream answer: a notification, then the response.
    let result = session
        .call_tool("t", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "done");
    let call = next(&mut seen).await;
    assert_eq!(call.headers[SESSION_ID], "s1");

    drop(session);
    let delete = next(&mut seen).await;
    assert_eq!(delete.method, "DELETE");
    assert_eq!(delete.headers[SESSION_ID], "s1");
}

#[tokio::test]
async fn a_refused_connection_is_a_send_error_in_words() {
    crate::connection::install_crypto();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let session = Session::new(link(&url, &BTreeMap::new()).unwrap(), Default::default());
    let err = session.initialize().await.unwrap_err();
    assert!(err.to_lowercase().contains("connect"), "{err}");
    assert!(
        err.ends_with("(while trying to send initialize request)"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_started_again_and_the_message_sent_again() {
    crate::connection::install_crypto();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, mut seen) = mpsc::unbounded_channel();
    let script = Arc::new(Script::default());
    tokio::spawn(serve(listener, tx, script.clone()));
    let session = Session::new(link(&url, &BTreeMap::new()).unwrap(), Default::default());
    session.initialize().await.unwrap();
    script.first_expired.store(true, Ordering::SeqCst);
    let result = session
        .call_tool("t", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "done");
    let mut calls = Vec::new();
    let mut initializes = 0;
    while let Ok(Some(request)) =
        tokio::time::timeout(Duration::from_millis(500), seen.recv()).await
    {
        match request.body["method"].as_str() {
            Some("tools/call") => calls.push(request.headers.get(SESSION_ID).cloned()),
            Some("initialize") => initializes += 1,
            _ => {}
        }
    }
    assert_eq!(initializes, 2);
    assert_eq!(calls, [Some("s1".to_string()), Some("s2".to_string())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_error_answer_fails_the_request_with_its_status_and_body() {
    crate::connection::install_crypto();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, _seen) = mpsc::unbounded_channel();
    tokio::spawn(serve(listener, tx, Arc::default()));
    let headers = BTreeMap::from([("X-Refuse".to_string(), "1".to_string())]);
    let session = Session::new(link(&url, &headers).unwrap(), Default::default());
    let err = tokio::time::timeout(Duration::from_secs(5), session.initialize())
        .await
        .expect("the error answer was waited past")
        .unwrap_err();
    assert!(err.starts_with("400 Bad Request: {"), "{err}");
    assert!(err.contains("Bad Request: no"), "{err}");
}
