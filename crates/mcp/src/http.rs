//! The streamable HTTP transport (`"type": "http"`): every message is a `POST` to the server's
//! URL (`Accept: application/json, text/event-stream`, the configured headers, the session id
//! once the server gave one, the protocol version after `initialize`). A 202 or 204 answer
//! carries nothing, a JSON body one message or a batch, an event stream messages as `data:`
//! events until it ends. After the handshake an optional `GET` stream carries what the server
//! sends outside a request (a `tools/list_changed`); an expired session (404) is started again
//! once; the session is deleted when the transport is dropped.

use crate::event_stream::Events;
use crate::rpc::{lock, Link, Outgoing};
use async_trait::async_trait;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use troupe_protocol::error_chain;

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How much of an error answer's body an error message keeps (as rmcp did).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Headers the transport sets itself, which a configured header may not replace.
const RESERVED: [&str; 3] = ["accept", SESSION_ID, LAST_EVENT_ID];

/// What the transport learned from the server.
#[derive(Default)]
struct State {
    session: Option<String>,
    version: Option<String>,
    /// The `initialize` request, sent again when the session expired.
    initialize: Option<Value>,
}

/// The transport's state, shared with its stream tasks.
struct Inner {
    http: reqwest::Client,
    url: String,
    headers: HeaderMap,
    state: Mutex<State>,
    /// Where the server's messages go.
    incoming: mpsc::UnboundedSender<Value>,
    /// The event streams being read.
    streams: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Held while an expired session is started again.
    restarting: tokio::sync::Mutex<()>,
}

/// The sending half; dropping it stops the streams and deletes the session (best effort).
struct Http(Arc<Inner>);

/// The transport to `url`, with `headers` on every request.
pub(crate) fn link(url: &str, headers: &BTreeMap<String, String>) -> Result<Link, String> {
    let headers = crate::sse::header_map(headers)?;
    if let Some(name) = headers
        .keys()
        .find(|name| RESERVED.contains(&name.as_str()))
    {
        return Err(format!("header {name} is set by the transport itself"));
    }
    reqwest::Url::parse(url).map_err(|e| format!("`url` {url:?}: {e}"))?;
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let (sender, incoming) = mpsc::unbounded_channel();
    let inner = Arc::new(Inner {
        http,
        url: url.to_string(),
        headers,
        state: Mutex::new(State::default()),
        incoming: sender,
        streams: Mutex::new(Vec::new()),
        restarting: tokio::sync::Mutex::new(()),
    });
    Ok(Link {
        outgoing: Arc::new(Http(inner)),
        incoming,
    })
}

#[async_trait]
impl Outgoing for Http {
    async fn send(&self, message: Value) -> Result<(), String> {
        // Its own task: a caller giving up does not cut a POST off half-way.
        let inner = self.0.clone();
        tokio::spawn(async move { inner.post(message).await })
            .await
            .map_err(|e| format!("the request was lost: {e}"))?
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        for stream in lock(&self.0.streams).drain(..) {
            stream.abort();
        }
        let (session, version) = {
            let mut state = lock(&self.0.state);
            (state.session.take(), state.version.clone())
        };
        let Some(session) = session else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut request = self
            .0
            .http
            .delete(&self.0.url)
            .headers(self.0.headers.clone())
            .header(SESSION_ID, session)
            .timeout(Duration::from_secs(5));
        if let Some(version) = version {
            request = request.header(PROTOCOL_VERSION, version);
        }
        runtime.spawn(async move {
            if let Err(e) = request.send().await {
                tracing::debug!("deleting the MCP session: {e}");
            }
        });
    }
}

/// What a `POST` was for.
fn method(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

impl Inner {
    /// Posts `message` and delivers what comes back.
    async fn post(self: &Arc<Self>, message: Value) -> Result<(), String> {
        let initialize = method(&message) == Some("initialize");
        if initialize {
            lock(&self.state).initialize = Some(message.clone());
        }
        let (mut response, session) = self.send_post(&message).await?;
        if response.status() == StatusCode::NOT_FOUND && session.is_some() && !initialize {
            self.restart(session.as_deref()).await?;
            response = self.send_post(&message).await?.0;
        }
        if initialize {
            let given = response.headers().get(SESSION_ID);
            let given = given.and_then(|v| v.to_str().ok()).map(str::to_string);
            lock(&self.state).session = given;
        }
        self.receive(response, message.get("id").cloned()).await?;
        if method(&message) == Some("notifications/initialized") {
            self.listen();
        }
        Ok(())
    }

    /// `request` with the configured headers, and the session's id and protocol version once
    /// the server gave them; the session id it carries.
    fn in_session(
        &self,
        request: reqwest::RequestBuilder,
    ) -> (reqwest::RequestBuilder, Option<String>) {
        let (session, version) = {
            let state = lock(&self.state);
            (state.session.clone(), state.version.clone())
        };
        let mut request = request.headers(self.headers.clone());
        if let Some(session) = &session {
            request = request.header(SESSION_ID, session);
        }
        if let Some(version) = &version {
            request = request.header(PROTOCOL_VERSION, version);
        }
        (request, session)
    }

    /// One `POST` of `message` with the session's headers; the session id it carried.
    async fn send_post(
        &self,
        message: &Value,
    ) -> Result<(reqwest::Response, Option<String>), String> {
        let post = self.http.post(&self.url);
        let (request, session) = self.in_session(post);
        let request = request
            .header(http::header::ACCEPT, ACCEPT_BOTH)
            .json(message);
        let response = request.send().await.map_err(|e| error_chain(&e))?;
        Ok((response, session))
    }

    /// Delivers the messages of `response` to a `POST` (of request `id`, if it was one).
    async fn receive(
        self: &Arc<Self>,
        response: reqwest::Response,
        id: Option<Value>,
    ) -> Result<(), String> {
        let status = response.status();
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(());
        }
        let kind = content_type(response.headers());
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error answering the request is the request's answer.
            if let (Some(id), Ok(message)) = (&id, serde_json::from_str::<Value>(&body)) {
                if message.get("error").is_some() && streams::answers(&message, id) {
                    self.deliver(message);
                    return Ok(());
                }
            }
            let body = body.trim();
            let end = (0..=body.len().min(MAX_ERROR_BODY))
                .rev()
                .find(|at| body.is_char_boundary(*at))
                .unwrap_or(0);
            return Err(format!("{status}: {}", &body[..end]));
        }
        if kind.starts_with("text/event-stream") {
            let inner = self.clone();
            self.keep(tokio::spawn(async move {
                inner.read_stream(Events::new(response), id).await;
            }));
            return Ok(());
        }
        let body = response.bytes().await.map_err(|e| error_chain(&e))?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        if !kind.starts_with("application/json") {
            return Err(format!("the server answered with content type {kind:?}"));
        }
        let message = serde_json::from_slice::<Value>(&body)
            .map_err(|e| format!("the server's answer is not JSON: {e}"))?;
        self.deliver(message);
        Ok(())
    }

    /// Passes a message of the server on, noting the protocol version of an `initialize`
    /// result.
    fn deliver(&self, message: Value) {
        if let Some(version) = message
            .get("result")
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str)
        {
            let mut state = lock(&self.state);
            if state.version.is_none() {
                state.version = Some(version.to_string());
            }
        }
        let _ = self.incoming.send(message);
    }

    /// Keeps a stream task, to stop it with the transport.
    fn keep(&self, task: tokio::task::JoinHandle<()>) {
        let mut streams = lock(&self.streams);
        streams.retain(|t| !t.is_finished());
        streams.push(task);
    }

    /// Starts the session again after the server forgot `expired`: the saved `initialize`,
    /// then `notifications/initialized`.
    async fn restart(self: &Arc<Self>, expired: Option<&str>) -> Result<(), String> {
        let _one = self.restarting.lock().await;
        let initialize = {
            let mut state = lock(&self.state);
            if state.session.as_deref() != expired {
                return Ok(()); // another request restarted it meanwhile
            }
            state.session = None;
            state.version = None;
            state.initialize.clone()
        };
        let Some(initialize) = initialize else {
            return Err("the session expired".into());
        };
        tracing::debug!("the MCP session expired; starting a new one");
        // The old session's streams are over.
        for stream in lock(&self.streams).drain(..) {
            stream.abort();
        }
        let (response, _) = self.send_post(&initialize).await?;
        if !response.status().is_success() {
            return Err(format!("starting a new session: {}", response.status()));
        }
        let session = response.headers().get(SESSION_ID);
        let session = session.and_then(|v| v.to_str().ok()).map(str::to_string);
        let result = match content_type(response.headers()).starts_with("text/event-stream") {
            true => {
                let mut events = Events::new(response);
                loop {
                    match events.next().await {
                        Some(Ok(event)) => match streams::stream_message(&event) {
                            Some(message) if message.get("id").is_some() => break message,
                            _ => continue,
                        },
                        _ => return Err("the new session's initialize got no answer".into()),
                    }
                }
            }
            false => response
                .json::<Value>()
                .await
                .map_err(|e| format!("the new session's initialize: {}", error_chain(&e)))?,
        };
        let version = result["result"]["protocolVersion"]
            .as_str()
            .map(str::to_string);
        {
            let mut state = lock(&self.state);
            state.session = session;
            state.version = version;
        }
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (response, _) = self.send_post(&initialized).await?;
        if !response.status().is_success() {
            return Err(format!("starting a new session: {}", response.status()));
        }
        self.listen();
        Ok(())
    }
}

/// The media type of a response, lower case.
fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

#[path = "http_streams.rs"]
mod streams;

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
