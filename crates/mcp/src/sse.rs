//! The legacy HTTP+SSE transport (MCP 2024-11-05, `"type": "sse"` in `.mcp.json`): a `GET`
//! opens an event stream whose first `endpoint` event names where to `POST` the client's
//! messages; the server's messages come back as `message` events.

use crate::event_stream::Events;
use crate::rpc::{Link, Outgoing};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use troupe_protocol::error_chain;

/// The sending half: posts to the endpoint the stream named.
struct SsePoster {
    http: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    /// Where messages are posted (from the `endpoint` event).
    endpoint: reqwest::Url,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SsePoster {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream at `url` and waits for its `endpoint` event.
pub(crate) async fn connect(url: &str, headers: &BTreeMap<String, String>) -> Result<Link, String> {
    let map = header_map(headers)?;
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
        .map_err(|e| format!("cannot open the event stream: {}", error_chain(&e)))?;
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
            match serde_json::from_str::<Value>(&event.data) {
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
    let outgoing = Arc::new(SsePoster {
        http,
        headers: map,
        endpoint,
        reader,
    });
    Ok(Link { outgoing, incoming })
}

/// The configured headers as HTTP headers.
pub(crate) fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value =
            http::HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

#[async_trait]
impl Outgoing for SsePoster {
    async fn send(&self, message: Value) -> Result<(), String> {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&message);
        // Its own task: a caller giving up does not cut a POST off half-way.
        tokio::spawn(post(request, self.endpoint.to_string()))
            .await
            .map_err(|e| format!("the message was lost: {e}"))?
    }
}

/// Sends one message's `request` to `url`.
async fn post(request: reqwest::RequestBuilder, url: String) -> Result<(), String> {
    let response = request.send().await.map_err(|e| {
        format!(
            "SSE server at {url}: posting a message failed: {}",
            error_chain(&e)
        )
    })?;
    match response.status().is_success() {
        true => Ok(()),
        false => Err(format!(
            "SSE server at {url}: posting a message answered {}",
            response.status()
        )),
    }
}
