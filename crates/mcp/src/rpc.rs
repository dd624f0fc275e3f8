//! A JSON-RPC 2.0 client session over a [`Link`] (a child's pipes, streamable HTTP, legacy SSE
//! or the SDK's channel): requests with integer ids answered through one reader task, which
//! reads the server's messages in order, counts `notifications/tools/list_changed` before any
//! response behind it is delivered, answers what the server asks (`ping`; anything else is
//! "method not found": troupe offers no sampling, roots or elicitation), and fails every
//! waiting request when the transport ends. A request dropped before its answer (a timeout,
//! Ctrl-C) sends `notifications/cancelled` for it.

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

/// The sending half of a transport.
#[async_trait]
pub(crate) trait Outgoing: Send + Sync {
    /// Carries one message to the server; the error says why, in words.
    async fn send(&self, message: Value) -> Result<(), String>;
}

/// A transport: where messages go, and the server's messages in the order they were read
/// (the channel ends with the transport).
pub(crate) struct Link {
    pub(crate) outgoing: Arc<dyn Outgoing>,
    pub(crate) incoming: mpsc::UnboundedReceiver<Value>,
}

/// What a session has seen of its server.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// `tools/list_changed` notifications received.
    pub(crate) list_changes: AtomicU64,
    /// Set when the server's side of the transport ended (the process exited, the stream closed).
    pub(crate) closed: AtomicBool,
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RpcError {
    /// The server answered with a JSON-RPC error.
    Server { code: i64, message: String },
    /// The request could not be sent (the transport's words).
    Send(String),
    /// The connection ended before the answer.
    Closed,
    /// The answer is not what the method returns.
    Invalid(String),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcError::Server { code, message } => write!(f, "MCP error {code}: {message}"),
            RpcError::Send(why) => write!(f, "sending failed: {why}"),
            RpcError::Closed => f.write_str("the connection closed"),
            RpcError::Invalid(why) => write!(f, "unexpected answer: {why}"),
        }
    }
}

impl RpcError {
    /// Whether the server went away (the transport closed, or a message could not be sent).
    pub(crate) fn is_gone(&self) -> bool {
        matches!(self, RpcError::Closed | RpcError::Send(_))
    }
}

type Answer = Result<Value, RpcError>;

/// The requests waiting for their answers.
#[derive(Default)]
struct Pending {
    /// Set when the transport ended: no request waits after that.
    closed: bool,
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
}

/// What the session and its reader share.
struct Shared {
    pending: Mutex<Pending>,
    signals: Arc<Signals>,
    outgoing: Arc<dyn Outgoing>,
}

/// One session with a server.
pub(crate) struct Session {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The reason sent with `notifications/cancelled` for a request its caller dropped.
const ABANDONED: &str = "request abandoned by the caller";

impl Session {
    /// A session over `link`, its reader started, reporting to `signals`.
    pub(crate) fn new(link: Link, signals: Arc<Signals>) -> Session {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            signals,
            outgoing: link.outgoing,
        });
        let reader = tokio::spawn(read(link.incoming, shared.clone()));
        Session {
            shared,
            next_id: AtomicU64::new(0),
            reader,
        }
    }

    /// Whether the transport has ended.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.shared.pending).closed
    }

    /// Sends request `method` with `params` and waits for its result. Dropping the future after
    /// the request went out tells the server it was cancelled.
    pub(crate) async fn request(&self, method: &str, params: Option<Value>) -> Answer {
        self.exchange(method, params, true).await
    }

    /// `initialize`, which the protocol never cancels: dropped, it is only forgotten.
    pub(crate) async fn request_uncancelled(&self, method: &str, params: Option<Value>) -> Answer {
        self.exchange(method, params, false).await
    }

    /// Sends a request and waits for its answer; `cancel`: a drop sends
    /// `notifications/cancelled`.
    async fn exchange(&self, method: &str, params: Option<Value>, cancel: bool) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.shared.pending);
            if pending.closed {
                return Err(RpcError::Closed);
            }
            pending.waiting.insert(id, tx);
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        // From here on the server may have it, even if the caller gives up half-way.
        let mut guard = Waiting {
            shared: &self.shared,
            id,
            cancel,
            done: false,
        };
        if let Err(why) = self.shared.outgoing.send(message).await {
            lock(&self.shared.pending).waiting.remove(&id);
            guard.done = true;
            return Err(RpcError::Send(why));
        }
        let answer = rx.await.unwrap_or(Err(RpcError::Closed));
        guard.done = true;
        answer
    }

    /// Sends notification `method` with `params`.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), RpcError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.shared
            .outgoing
            .send(message)
            .await
            .map_err(RpcError::Send)
    }
}

/// A request waiting for its answer: dropped before it (its caller gave up), it leaves the
/// pending requests and, unless it is `initialize`, the server is told.
struct Waiting<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
    /// Whether a drop sends `notifications/cancelled`.
    cancel: bool,
    /// Set once the request has its answer (or could not be sent).
    done: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let unanswered = lock(&self.shared.pending)
            .waiting
            .remove(&self.id)
            .is_some();
        if !(unanswered && self.cancel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let outgoing = self.shared.outgoing.clone();
        let cancelled = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": self.id, "reason": ABANDONED},
        });
        runtime.spawn(async move {
            if let Err(why) = outgoing.send(cancelled).await {
                tracing::debug!("notifications/cancelled not sent: {why}");
            }
        });
    }
}

/// A lock that a panic elsewhere does not poison: every update under the client's locks is
/// one assignment or one map operation, so what they guard stays consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The reader: every message of the server in the order read, then the end.
async fn read(mut incoming: mpsc::UnboundedReceiver<Value>, shared: Arc<Shared>) {
    while let Some(message) = incoming.recv().await {
        match message {
            Value::Array(batch) => batch.into_iter().for_each(|m| dispatch(&shared, m)),
            message => dispatch(&shared, message),
        }
    }
    shared.signals.closed.store(true, Ordering::SeqCst);
    let waiting = {
        let mut pending = lock(&shared.pending);
        pending.closed = true;
        std::mem::take(&mut pending.waiting)
    };
    for (_, tx) in waiting {
        let _ = tx.send(Err(RpcError::Closed));
    }
}

/// Handles one message of the server.
fn dispatch(shared: &Arc<Shared>, mut message: Value) {
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let method = message.get("method").and_then(Value::as_str);
    match (method, id) {
        (Some(method), Some(id)) => answer(shared, method, id),
        (Some("notifications/tools/list_changed"), None) => {
            shared.signals.list_changes.fetch_add(1, Ordering::SeqCst);
        }
        (Some(method), None) => tracing::trace!(method, "MCP notification"),
        (None, Some(id)) => {
            let Some(id) = id.as_u64().or_else(|| id.as_str()?.parse().ok()) else {
                tracing::debug!(%id, "a response to no request of troupe's");
                return;
            };
            let result = message.get_mut("result").map(Value::take);
            let answer = match (result, message.get("error")) {
                (Some(result), _) => Ok(result),
                (None, Some(error)) => Err(RpcError::Server {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                }),
                (None, None) => Err(RpcError::Invalid(
                    "a response with neither result nor error".into(),
                )),
            };
            match lock(&shared.pending).waiting.remove(&id) {
                Some(tx) => {
                    let _ = tx.send(answer);
                }
                None => tracing::debug!(id, "a response to no waiting request"),
            }
        }
        (None, None) => tracing::debug!("a message that is no JSON-RPC message: {message}"),
    }
}

/// Answers request `method` (`id`) of the server: `ping` with an empty result, anything else
/// with "method not found".
fn answer(shared: &Arc<Shared>, method: &str, id: Value) {
    let answer = match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": Map::new()}),
        _ => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": METHOD_NOT_FOUND, "message": format!("Method not found: {method}")},
        }),
    };
    let outgoing = shared.outgoing.clone();
    tokio::spawn(async move {
        if let Err(why) = outgoing.send(answer).await {
            tracing::debug!("an answer to the server was not sent: {why}");
        }
    });
}

/// JSON-RPC's "method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

#[cfg(test)]
#[path = "rpc_tests.rs"]
mod tests;
