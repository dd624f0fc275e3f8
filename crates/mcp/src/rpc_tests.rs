//! The session against a scripted server: answers by id, list changes counted in order, the
//! server's requests answered, cancellation of an abandoned request, the end of the transport.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use super::*;
use std::time::Duration;

/// The test's side of a link: what the session sent, and a way to send it messages.
struct Server {
    sent: mpsc::UnboundedReceiver<Value>,
    to_client: Option<mpsc::UnboundedSender<Value>>,
}

impl Server {
    async fn next_sent(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(5), self.sent.recv())
            .await
            .expect("the session sent nothing")
            .expect("the link is gone")
    }

    fn say(&self, message: Value) {
        self.to_client.as_ref().unwrap().send(message).unwrap();
    }
}

struct Recorder(mpsc::UnboundedSender<Value>);

#[async_trait]
impl Outgoing for Recorder {
    async fn send(&self, message: Value) -> Result<(), String> {
        self.0.send(message).map_err(|_| "gone".to_string())
    }
}

fn session() -> (Arc<Session>, Arc<Signals>, Server) {
    let (out, sent) = mpsc::unbounded_channel();
    let (to_client, incoming) = mpsc::unbounded_channel();
    let link = Link {
        outgoing: Arc::new(Recorder(out)),
        incoming,
    };
    let signals = Arc::new(Signals::default());
    let session = Arc::new(Session::new(link, signals.clone()));
    let server = Server {
        sent,
        to_client: Some(to_client),
    };
    (session, signals, server)
}

#[tokio::test]
async fn answers_reach_their_requests_by_id() {
    let (session, _, mut server) = session();
    let first = tokio::spawn({
        let session = session.clone();
        async move { session.request("a", None).await }
    });
    let second = tokio::spawn({
        let session = session.clone();
        async move { session.request("b", Some(json!({"x": 1}))).await }
    });
    let mut ids = HashMap::new();
    for _ in 0..2 {
        let sent = server.next_sent().await;
        assert_eq!(sent["jsonrpc"], "2.0");
        ids.insert(
            sent["method"].as_str().unwrap().to_string(),
            sent["id"].clone(),
        );
    }
    server
        .say(json!({"jsonrpc": "2.0", "id": ids["b"], "error": {"code": -32000, "message": "no"}}));
    server.say(json!({"jsonrpc": "2.0", "id": ids["a"], "result": {"ok": true}}));
    assert_eq!(first.await.unwrap(), Ok(json!({"ok": true})));
    assert_eq!(
        second.await.unwrap(),
        Err(RpcError::Server {
            code: -32000,
            message: "no".into()
        })
    );
}

#[tokio::test]
async fn pending_requests_fail_when_the_transport_ends() {
    let (session, signals, mut server) = session();
    let waiting = tokio::spawn({
        let session = session.clone();
        async move { session.request("tools/call", None).await }
    });
    server.next_sent().await;
    server.to_client = None;
    let answer = waiting.await.unwrap();
    assert_eq!(answer, Err(RpcError::Closed));
    assert!(answer.unwrap_err().is_gone());
    assert!(signals.closed.load(Ordering::SeqCst));
    assert!(session.is_closed());
    assert_eq!(session.request("later", None).await, Err(RpcError::Closed));
}

#[tokio::test]
async fn a_ping_of_the_server_is_answered() {
    let (_session, _, mut server) = session();
    server.say(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}));
    assert_eq!(
        server.next_sent().await,
        json!({"jsonrpc": "2.0", "id": "p1", "result": {}})
    );
}

#[tokio::test]
async fn other_requests_of_the_server_are_method_not_found() {
    let (_session, _, mut server) = session();
    server
        .say(json!({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {}}));
    let answer = server.next_sent().await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], METHOD_NOT_FOUND);
    assert!(answer.get("result").is_none());
}

#[tokio::test]
async fn a_dropped_request_is_cancelled_on_the_server() {
    let (session, _, mut server) = session();
    let slow = session.request("tools/call", None);
    let timed_out = tokio::time::timeout(Duration::from_millis(50), slow).await;
    assert!(timed_out.is_err());
    let sent = server.next_sent().await;
    let cancelled = server.next_sent().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], sent["id"]);
    assert!(cancelled.get("id").is_none());
    // Its late answer goes nowhere; the session goes on.
    server.say(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {}}));
    let next = tokio::spawn({
        let session = session.clone();
        async move { session.request("ping", None).await }
    });
    let sent = server.next_sent().await;
    server.say(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {}}));
    assert_eq!(next.await.unwrap(), Ok(json!({})));
}

#[tokio::test]
async fn a_dropped_initialize_is_only_forgotten() {
    let (session, _, mut server) = session();
    let init = tokio::time::timeout(Duration::from_millis(50), session.initialize()).await;
    assert!(init.is_err());
    assert_eq!(server.next_sent().await["method"], "initialize");
    let more = tokio::time::timeout(Duration::from_millis(100), server.sent.recv()).await;
    assert!(more.is_err(), "sent after initialize was dropped: {more:?}");
}

#[tokio::test]
async fn a_list_change_is_counted_before_the_response_behind_it() {
    let (session, signals, mut server) = session();
    let call = tokio::spawn({
        let session = session.clone();
        let signals = signals.clone();
        async move {
            let answer = session.request("tools/call", None).await;
            (answer, signals.list_changes.load(Ordering::SeqCst))
        }
    });
    let sent = server.next_sent().await;
    server.say(json!([
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
    ]));
    server.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    server.say(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": []}}));
    let (answer, seen) = call.await.unwrap();
    assert!(answer.is_ok());
    assert_eq!(seen, 2);
}

#[tokio::test]
async fn initialize_says_who_troupe_is_then_initialized() {
    let (session, _, mut server) = session();
    let init = tokio::spawn({
        let session = session.clone();
        async move { session.initialize().await }
    });
    let sent = server.next_sent().await;
    assert_eq!(sent["method"], "initialize");
    assert_eq!(sent["params"]["capabilities"], json!({}));
    assert_eq!(sent["params"]["clientInfo"]["name"], "troupe");
    assert_eq!(
        sent["params"]["protocolVersion"],
        crate::protocol::PROTOCOL_VERSION
    );
    server.say(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}, "prompts": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }}));
    let info = init.await.unwrap().unwrap();
    assert!(info.has_prompts());
    assert_eq!(info.protocol_version, "2025-06-18");
    assert_eq!(
        server.next_sent().await,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
}

#[tokio::test]
async fn initialize_refused_or_cut_off_is_said_in_words() {
    let (session, _, mut server) = session();
    let init = tokio::spawn({
        let session = session.clone();
        async move { session.initialize().await }
    });
    let sent = server.next_sent().await;
    server.say(json!({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32602, "message": "bad version"}}));
    let err = init.await.unwrap().unwrap_err();
    assert_eq!(err, "JSON-RPC error: -32602: bad version");

    let (session, _, mut server) = self::session();
    let init = tokio::spawn(async move { session.initialize().await });
    server.next_sent().await;
    server.to_client = None;
    let err = init.await.unwrap().unwrap_err();
    assert!(
        err.contains("closed before the initialize response"),
        "{err}"
    );
}

#[tokio::test]
async fn lists_follow_next_cursor() {
    let (session, _, mut server) = session();
    let list = tokio::spawn({
        let session = session.clone();
        async move { session.list_all_tools().await }
    });
    let first = server.next_sent().await;
    assert!(first.get("params").is_none());
    server.say(json!({"jsonrpc": "2.0", "id": first["id"], "result": {
        "tools": [{"name": "a", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}],
        "nextCursor": "2",
    }}));
    let second = server.next_sent().await;
    assert_eq!(second["params"], json!({"cursor": "2"}));
    server.say(json!({"jsonrpc": "2.0", "id": second["id"], "result": {
        "tools": [{"name": "b", "description": "B", "inputSchema": {"type": "object"}}],
    }}));
    let tools = list.await.unwrap().unwrap();
    assert_eq!(tools.len(), 2);
    assert!(tools[0].read_only() && !tools[1].read_only());
    assert_eq!(tools[1].description.as_deref(), Some("B"));
}
