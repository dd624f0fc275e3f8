//! The legacy HTTP+SSE transport (MCP 2024-11-05, `"type": "sse"` in `.mcp.json`), which rmcp
//! no longer has: a `GET` opens an event stream whose first `endpoint` event names where to
//! `POST` the client's messages; the server's messages come back as `message` events.

use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// Why the SSE session failed.
#[derive(Debug, thiserror::Error)]
#[error("SSE server at {url}: {message}")]
pub struct SseError {
    url: String,
    message: String,
}

/// rmcp's client transport over an open SSE stream and its message endpoint.
pub(crate) struct SseTransport {
    http: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    /// Where messages are posted (from the `endpoint` event).
    endpoint: reqwest::Url,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for its `endpoint` event.
    pub(crate) async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<SseTransport, String> {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("header {name:?}: {e}"))?;
            let value =
                http::HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
            map.insert(name, value);
        }
        let base = reqwest::Url::parse(url).map_err(|e| format!("`url` {url:?}: {e}"))?;
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        let response = http
            .get(base.clone())
            .headers(map.clone())
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("cannot open the event stream: {}", causes(&e)))?;
        if !response.status().is_success() {
            return Err(format!(
                "opening the event stream answered {}",
                response.status()
            ));
        }
        let mut events = Events::new(response);
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.name == "endpoint" => break event.data,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("the event stream broke off: {e}")),
                None => return Err("the event stream ended before its `endpoint` event".into()),
            }
        };
        let endpoint = base
            .join(endpoint.trim())
            .map_err(|e| format!("its endpoint {endpoint:?} is not a URL: {e}"))?;
        let (sender, incoming) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                if event.name != "message" {
                    continue;
                }
                match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
                    Ok(message) => {
                        if sender.send(message).is_err() {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "an SSE message is not JSON-RPC"),
                }
            }
            // The channel closes with the task: the session sees the server's end.
        });
        Ok(SseTransport {
            http,
            headers: map,
            endpoint,
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        let url = self.endpoint.to_string();
        async move {
            let fail = |message: String| SseError {
                url: url.clone(),
                message,
            };
            let response = request
                .send()
                .await
                .map_err(|e| fail(format!("posting a message failed: {}", causes(&e))))?;
            match response.status().is_success() {
                true => Ok(()),
                false => Err(fail(format!(
                    "posting a message answered {}",
                    response.status()
                ))),
            }
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        self.incoming.close();
        std::future::ready(Ok(()))
    }
}

/// One server-sent event.
#[derive(Debug, PartialEq)]
struct Event {
    /// `event:` (`message` when absent).
    name: String,
    /// The `data:` lines, joined by newlines.
    data: String,
}

/// The events of a response body, parsed as they arrive.
struct Events {
    response: reqwest::Response,
    /// Bytes of the line in progress (a character may be split across chunks).
    buffer: Vec<u8>,
    parser: Parser,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            buffer: Vec::new(),
            parser: Parser::default(),
        }
    }

    /// The next event; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Result<Event, String>> {
        loop {
            if let Some(at) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=at).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(event) = self.parser.line(line.trim_end_matches(['\n', '\r'])) {
                    return Some(Ok(event));
                }
                continue;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.buffer.extend_from_slice(&bytes),
                Ok(None) => return None,
                Err(e) => return Some(Err(causes(&e))),
            }
        }
    }
}

/// The SSE line protocol: fields until a blank line, comments ignored.
#[derive(Default)]
struct Parser {
    name: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// Takes one line (without its end); a blank line completes the event in progress.
    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let data = self.data.take();
            let name = self.name.take();
            return data.map(|data| Event {
                name: name.unwrap_or_else(|| "message".to_string()),
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.name = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            _ => {}
        }
        None
    }
}

/// An error and its sources, `outer: inner`.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_events() {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for line in [
            ": a comment",
            "event: endpoint",
            "data: /message?sessionId=1",
            "",
            "data: {\"a\":",
            "data: 1}",
            "",
            "",
        ] {
            events.extend(parser.line(line));
        }
        assert_eq!(
            events,
            [
                Event {
                    name: "endpoint".into(),
                    data: "/message?sessionId=1".into()
                },
                Event {
                    name: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
            ]
        );
    }
}
