//! The event streams of a streamable HTTP session: the optional `GET` stream of what the server
//! sends outside a request, and a request's event-stream answer, each read until it ends and
//! resumed (`Last-Event-ID`) when it breaks off early.

use super::{content_type, Inner, LAST_EVENT_ID};
use crate::event_stream::{Event, Events};
use crate::rpc::lock;
use http::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use troupe_protocol::error_chain;

impl Inner {
    /// Opens the stream of what the server sends outside a request, when it has sessions.
    pub(super) fn listen(self: &Arc<Self>) {
        if lock(&self.state).session.is_none() {
            return;
        }
        let inner = self.clone();
        self.keep(tokio::spawn(async move {
            match inner.get(None).await {
                Ok(Some(events)) => inner.read_stream(events, None).await,
                Ok(None) => tracing::debug!("the MCP server offers no event stream"),
                Err(e) => tracing::debug!("the MCP server's event stream: {e}"),
            }
        }));
    }

    /// A `GET` for the session's event stream (resuming after `last`); `None` when the server
    /// has none (405, 404).
    async fn get(&self, last: Option<&str>) -> Result<Option<Events>, String> {
        let (request, _) = self.in_session(self.http.get(&self.url));
        let mut request =
            request.header(http::header::ACCEPT, "text/event-stream, application/json");
        if let Some(last) = last {
            request = request.header(LAST_EVENT_ID, last);
        }
        let response = request.send().await.map_err(|e| error_chain(&e))?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED || status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("{status}"));
        }
        if !content_type(response.headers()).starts_with("text/event-stream") {
            return Ok(None);
        }
        Ok(Some(Events::new(response)))
    }

    /// Reads `events` and delivers their messages: for a request's stream (`id`), until its
    /// response; for the session's stream, as long as the server keeps it. A stream that ends
    /// early is resumed through `GET` with the last event id (the session's stream even
    /// without one), waiting longer after each failure.
    pub(super) async fn read_stream(self: &Arc<Self>, mut events: Events, id: Option<Value>) {
        let mut last: Option<String> = None;
        let mut pause = Duration::from_secs(1);
        loop {
            while let Some(Ok(event)) = events.next().await {
                if event.id.is_some() {
                    last = event.id.clone();
                }
                pause = Duration::from_secs(1);
                let Some(message) = stream_message(&event) else {
                    continue;
                };
                let answered = id.as_ref().is_some_and(|id| answers(&message, id));
                self.deliver(message);
                if answered {
                    return;
                }
            }
            if id.is_some() && last.is_none() {
                return; // a request's stream that cannot be resumed
            }
            loop {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(30));
                match self.get(last.as_deref()).await {
                    Ok(Some(resumed)) => {
                        events = resumed;
                        break;
                    }
                    Ok(None) => return,
                    Err(e) => tracing::debug!("resuming the MCP server's event stream: {e}"),
                }
            }
        }
    }
}

/// The message an event of a stream carries, if it carries one.
pub(super) fn stream_message(event: &Event) -> Option<Value> {
    if event.name != "message" || event.data.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(&event.data) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::debug!("an event of the MCP server is not JSON: {e}");
            None
        }
    }
}

/// Whether `message` (or a message of a batch) is the response to request `id`.
pub(super) fn answers(message: &Value, id: &Value) -> bool {
    match message {
        Value::Array(batch) => batch.iter().any(|m| answers(m, id)),
        _ => message.get("method").is_none() && message.get("id") == Some(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_stream::Parser;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// The messages of an event-stream body, as the transport reads them.
    fn messages(body: &str) -> Vec<Value> {
        let mut parser = Parser::default();
        body.split('\n')
            .filter_map(|line| parser.line(line.trim_end_matches('\r')))
            .filter_map(|event| stream_message(&event))
            .collect()
    }

    #[test]
    fn an_event_stream_body_carries_messages_as_data_events() {
        let body = ": keep-alive\n\nid: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\nevent: ping\ndata: x\n\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":3,\"result\":{}}\r\n\r\ndata: not json\n\n";
        let got = messages(body);
        assert_eq!(
            got,
            [
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            ]
        );
        assert!(answers(&got[1], &json!(3)));
        assert!(!answers(&got[0], &json!(3)));
        assert!(answers(&json!([got[0], got[1]]), &json!(3)));
    }

    #[test]
    fn reserved_headers_are_refused() {
        let headers = BTreeMap::from([("Mcp-Session-Id".to_string(), "x".to_string())]);
        let err = super::super::link("http://127.0.0.1:1/mcp", &headers)
            .err()
            .unwrap();
        assert!(err.contains("mcp-session-id"), "{err}");
    }
}
