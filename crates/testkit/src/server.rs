//! The fake model server: its own thread and runtime, per-agent scripts, and the journal.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::answer::{Answer, ScriptedBody};
use crate::quirks::OpenAiQuirks;
use crate::recorded::Recorded;
use crate::render::{self, Ids};
use crate::script::{Step, Wire};

/// The header naming the agent a request comes from.
pub const AGENT_HEADER: &str = "x-troupe-agent";

/// The variable that makes troupe send [`AGENT_HEADER`] (troupe never sends it otherwise): set
/// it to `1` for a troupe talking to this server with more than one agent.
pub const AGENT_HEADER_VAR: &str = "TROUPE_AGENT_HEADER";

/// The agent a request is routed to when it carries no agent header.
pub const DEFAULT_AGENT: &str = "lead";

type Fallback = dyn Fn(&Recorded) -> Step + Send + Sync;

/// What the server and its owner share.
struct Shared {
    state: Mutex<State>,
    ids: Ids,
}

#[derive(Default)]
struct State {
    queues: HashMap<String, VecDeque<Step>>,
    fallback: Option<Arc<Fallback>>,
    /// Shared with the requests' own handlers: journaling a request copies no body.
    journal: Vec<Arc<Recorded>>,
    /// Requests above this many tokens are refused as too long (see `set_context_limit`).
    context_limit: Option<u64>,
    /// How the OpenAI-compatible side departs from OpenAI (see `set_openai_quirks`).
    quirks: OpenAiQuirks,
    /// Anthropic prompt caching's entries (see `crate::cache`).
    cache: crate::cache::Cache,
    /// The model ids `GET /v1/models` lists (see `set_served_models`).
    served_models: Vec<String>,
    /// The paths of the `HEAD` requests received (a client connecting ahead of its first
    /// request asks for one); not model requests, so not journaled.
    heads: Vec<String>,
    /// Connections accepted so far.
    connections: usize,
    /// Unpaced answers go out in one write (see `set_whole_answers`).
    whole_answers: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A scripted fake model server on 127.0.0.1 speaking Anthropic and OpenAI streaming.
/// Dropping it stops the server.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Starts on 127.0.0.1 at a random port, on its own thread with its own tokio runtime, so it
    /// serves plain `#[test]`s and async tests alike.
    ///
    /// # Panics
    /// When the port cannot be bound or the thread not started: this is test tooling.
    pub fn start() -> FakeServer {
        FakeServer::start_on(0)
    }

    /// Starts on 127.0.0.1 at `port` (0: a random one), as [`FakeServer::start`] does.
    ///
    /// # Panics
    /// When the port cannot be bound or the thread not started: this is test tooling.
    pub fn start_on(port: u16) -> FakeServer {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .unwrap_or_else(|e| panic!("fake server: cannot bind 127.0.0.1:{port}: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake server: no local address: {e}"));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            ids: Ids::default(),
        });
        let (tx, rx) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("troupe-fake-model")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("fake server: cannot build a runtime: {e}"));
        let serve_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("troupe-fake-model".into())
            .spawn(move || {
                runtime.block_on(serve(listener, serve_shared, rx));
                // Dropping the runtime here cancels every connection task before Drop returns.
                drop(runtime);
            })
            .unwrap_or_else(|e| panic!("fake server: cannot start its thread: {e}"));
        FakeServer {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// Writes each answer that has no pause in it in one piece, as an instantaneous model's
    /// server would have it all ready, rather than flushing after every event (the default,
    /// so that a client sees a stream arrive event by event). The benches use it: the flushes
    /// cost both the server and its client a write and a wake per event.
    pub fn set_whole_answers(&self, whole: bool) {
        self.shared.state().whole_answers = whole;
    }

    /// The socket address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The Anthropic base URL (`http://127.0.0.1:PORT`; clients post to `{url}/v1/messages`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI base URL (`http://127.0.0.1:PORT/v1`; clients post to
    /// `{openai_url}/chat/completions`).
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Environment variables pointing the troupe binary at this server for `wire`.
    pub fn env(&self, wire: Wire) -> Vec<(String, String)> {
        let pairs = match wire {
            Wire::Anthropic => [
                ("ANTHROPIC_BASE_URL", self.url()),
                ("ANTHROPIC_API_KEY", "fake-key".into()),
            ],
            // Codex reads the same two variables for the Responses API.
            Wire::OpenAi | Wire::Responses => [
                ("OPENAI_BASE_URL", self.openai_url()),
                ("OPENAI_API_KEY", "fake-key".into()),
            ],
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Appends steps to `agent`'s queue; each request of that agent plays the next one.
    pub fn script(&self, agent: &str, steps: impl IntoIterator<Item = Step>) {
        self.shared
            .state()
            .queues
            .entry(agent.to_string())
            .or_default()
            .extend(steps);
    }

    /// Sets the step source used when an agent's queue is empty (replacing any earlier one).
    pub fn set_fallback(&self, f: impl Fn(&Recorded) -> Step + Send + Sync + 'static) {
        self.shared.state().fallback = Some(Arc::new(f));
    }

    /// Makes the server refuse, like a real provider, every request larger than `tokens`
    /// (counted as [`Recorded::tokens`]) with the wire's own prompt-too-long error (Anthropic:
    /// 400 `prompt is too long: N tokens > M maximum`; OpenAI: 400 `context_length_exceeded`).
    /// A refused request is journaled (marked [`Recorded::rejected_too_long`]) but plays no
    /// scripted step. `None` lifts the limit.
    pub fn set_context_limit(&self, tokens: Option<u64>) {
        self.shared.state().context_limit = tokens;
    }

    /// Makes the OpenAI-compatible side behave like a real server that departs from OpenAI
    /// (e.g. [`OpenAiQuirks::llama_cpp`]); requests a quirk answers play no scripted step.
    pub fn set_openai_quirks(&self, quirks: OpenAiQuirks) {
        self.shared.state().quirks = quirks;
    }

    /// The model ids `GET {openai_url}/models` lists, as an OpenAI-compatible server's model
    /// list (`{"object": "list", "data": [{"id": …}]}`); none until set. The listing is not a
    /// model request: it is not journaled.
    pub fn set_served_models(&self, ids: &[&str]) {
        self.shared.state().served_models = ids.iter().map(|id| id.to_string()).collect();
    }

    /// The paths of the `HEAD` requests received, in arrival order (answered 404, as the real
    /// APIs answer their base URL; they are not model requests and not journaled).
    pub fn head_requests(&self) -> Vec<String> {
        self.shared.state().heads.clone()
    }

    /// How many connections the server has accepted.
    pub fn connections(&self) -> usize {
        self.shared.state().connections
    }

    /// Every model request received, in arrival order (faulted ones included).
    pub fn journal(&self) -> Vec<Recorded> {
        let state = self.shared.state();
        state.journal.iter().map(|r| Recorded::clone(r)).collect()
    }

    /// The requests received from `agent`, in arrival order.
    pub fn requests_for(&self, agent: &str) -> Vec<Recorded> {
        self.shared
            .state()
            .journal
            .iter()
            .filter(|r| r.agent == agent)
            .map(|r| Recorded::clone(r))
            .collect()
    }

    /// How many scripted steps of `agent` have not been played yet.
    pub fn remaining(&self, agent: &str) -> usize {
        self.shared
            .state()
            .queues
            .get(agent)
            .map_or(0, VecDeque::len)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            // The receiver is gone only when the server already stopped; nothing to do then.
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panicked server thread has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Accepts connections until shutdown, one task per connection (HTTP/1.1 with keep-alive).
async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        // Out of descriptors or similar: back off instead of spinning.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                // Small SSE writes must leave at once rather than wait for Nagle.
                let _ = stream.set_nodelay(true);
                shared.state().connections += 1;
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(Arc::clone(&shared), req));
                    // Connection errors (client gone, scripted abort) end just this connection.
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
}

/// Records one request, picks its step and answers it.
async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<ScriptedBody>, Infallible> {
    let path = req.uri().path().to_string();
    if req.method() == hyper::Method::HEAD {
        shared.state().heads.push(path);
        return Ok(respond(Answer::json(404, &serde_json::json!({}))));
    }
    if req.method() == hyper::Method::GET && path.ends_with("/models") {
        let data: Vec<Value> = shared
            .state()
            .served_models
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model", "owned_by": "fake"}))
            .collect();
        return Ok(respond(Answer::json(
            200,
            &serde_json::json!({"object": "list", "data": data}),
        )));
    }
    let wire = if path.ends_with("/messages") {
        Wire::Anthropic
    } else if path.ends_with("/chat/completions") {
        Wire::OpenAi
    } else if path.ends_with("/responses") {
        Wire::Responses
    } else {
        let msg = format!("fake server: no model endpoint at {path}");
        return Ok(respond(Answer::json(
            404,
            &serde_json::json!({"error": {"message": msg}}),
        )));
    };
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let agent = req
        .headers()
        .get(AGENT_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let bytes = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Ok(respond(render::harness_error(
                wire,
                &format!("fake server: bad request body: {e}"),
            )));
        }
    };
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let mut rec = Recorded {
        agent,
        wire,
        path,
        headers,
        body,
        at: Instant::now(),
        bytes: bytes.len(),
        rejected_too_long: false,
    };

    let (rec, step, fallback, used, whole) = {
        let mut state = shared.state();
        if let Some(limit) = state.context_limit.filter(|limit| rec.tokens() > *limit) {
            rec.rejected_too_long = true;
            let tokens = rec.tokens();
            state.journal.push(Arc::new(rec));
            return Ok(respond(render::too_long(wire, tokens, limit)));
        }
        let received = Arc::new(rec);
        state.journal.push(Arc::clone(&received));
        let quirks = state.quirks;
        if let Some(answer) = quirks.answer(&received) {
            return Ok(respond(answer));
        }
        let rec = match quirks.shown(&received) {
            Some(shown) => Arc::new(shown),
            None => received,
        };
        let used = match wire {
            Wire::Anthropic => match state.cache.apply(&rec.body, Instant::now()) {
                Ok(used) => used,
                Err(message) => return Ok(respond(crate::anthropic::error(400, &message))),
            },
            Wire::OpenAi | Wire::Responses => crate::cache::CacheUse::default(),
        };
        let step = state
            .queues
            .get_mut(&rec.agent)
            .and_then(VecDeque::pop_front);
        (rec, step, state.fallback.clone(), used, state.whole_answers)
    };
    let step = match (step, fallback) {
        (Some(step), _) => Ok(step),
        // The fallback runs outside the lock so it may take its time.
        (None, Some(f)) => render::guarded(&rec, || f(&rec)),
        (None, None) => Err(render::harness_error(
            wire,
            &format!(
                "fake server: no scripted step left for agent '{}'",
                rec.agent
            ),
        )),
    };
    let answer = match step {
        Ok(step) => {
            let pending = used.pending.clone();
            let answer = play(step, &rec, &shared.ids, (rec.prompt_bytes(), used)).await;
            // The response begins now: what the request wrote becomes readable.
            shared.state().cache.commit(&pending);
            answer
        }
        Err(answer) => answer,
    };
    Ok(respond(match whole {
        true => answer.whole(),
        false => answer,
    }))
}

/// Plays one step (waiting out delays) into an answer.
async fn play(
    mut step: Step,
    rec: &Recorded,
    ids: &Ids,
    request_bytes: (usize, crate::cache::CacheUse),
) -> Answer {
    let mut pace = None;
    let answer = loop {
        match step {
            Step::Reply(r) => break render::reply(rec, &r, ids, request_bytes),
            Step::Dynamic(f) => {
                break match render::guarded(rec, || f(rec)) {
                    Ok(r) => render::reply(rec, &r, ids, request_bytes),
                    Err(answer) => answer,
                };
            }
            Step::Fault(f) => break render::fault(rec, &f, ids),
            Step::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                step = *inner;
            }
            Step::Paced(gap, inner) => {
                pace = Some(gap);
                step = *inner;
            }
        }
    };
    match pace {
        Some(gap) => answer.paced(gap),
        None => answer,
    }
}

/// The hyper response for an answer.
fn respond(answer: Answer) -> Response<ScriptedBody> {
    let mut resp = Response::new(ScriptedBody::new(answer.body, answer.streamed));
    *resp.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            resp.headers_mut().append(name, value);
        }
    }
    resp
}
