//! The connection: a small tokio runtime of the store's own (the store's traits are
//! synchronous and may be called from any thread, async or not), the NATS client on it, and
//! the one way store code runs a request — bounded in time, retried while the server is away.

use std::future::Future;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use troupe_store::StoreError;

use crate::url::{Auth, NatsUrl};

/// How long a request waits for the server's answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation keeps retrying while the server is unreachable (restarting, a network
/// blip) before it fails: the client reconnects meanwhile, on its own.
pub const RETRY_FOR: Duration = Duration::from_secs(30);

/// How long connecting may take before the server counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// What to check when the server cannot be used.
pub const HINT: &str = "check that nats-server is running with JetStream enabled (-js), that the URL's host and port are right, and the credentials";

/// One attempt's failure that is worth trying again: the server did not answer or the
/// connection is down (definitive answers are values of the attempt's result instead).
#[derive(Debug)]
pub enum Fail {
    /// Retried until [`RETRY_FOR`] has passed.
    Transient(String),
}

impl<E: std::fmt::Display> From<E> for Fail
where
    E: std::error::Error,
{
    fn from(e: E) -> Fail {
        Fail::Transient(e.to_string())
    }
}

/// The connection to the server, with the runtime its client lives on.
pub struct Conn {
    runtime: Option<Runtime>,
    handle: Handle,
    /// The client.
    pub client: async_nats::Client,
    /// JetStream on the client.
    pub js: jetstream::Context,
    /// The servers, for people (no credentials).
    pub server: String,
    /// Counts (re)connections: a watcher that missed messages while the connection was down
    /// wakes when it changes.
    pub connections: watch::Receiver<u64>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("server", &self.server)
            .finish()
    }
}

impl Conn {
    /// Connects to the server `url` names; a server that is down or refuses is an error
    /// within a few seconds saying what to check.
    pub fn connect(url: &NatsUrl) -> Result<Conn, StoreError> {
        let server = url.display();
        let fail = |action: &str, detail: String| StoreError::Backend {
            action: action.to_string(),
            server: server.clone(),
            detail,
            hint: HINT,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("troupe-nats")
            .enable_all()
            .build()
            .map_err(|e| fail("start the NATS client's runtime", e.to_string()))?;
        let handle = runtime.handle().clone();
        let (tx, rx) = watch::channel(0u64);
        let url2 = url.clone();
        let connected = runtime.block_on(async move {
            let mut options = match &url2.creds {
                Some(path) => async_nats::ConnectOptions::with_credentials_file(path)
                    .await
                    .map_err(|e| {
                        format!("cannot read the credentials file {}: {e}", path.display())
                    })?,
                None => async_nats::ConnectOptions::new(),
            };
            options = match &url2.auth {
                Auth::None => options,
                Auth::UserPassword(user, pass) => {
                    options.user_and_password(user.clone(), pass.clone())
                }
                Auth::Token(token) => options.token(token.clone()),
            };
            let options = options
                .name("troupe")
                .connection_timeout(CONNECT_TIMEOUT)
                .request_timeout(Some(REQUEST_TIMEOUT))
                .max_reconnects(None)
                .event_callback(move |event| {
                    let tx = tx.clone();
                    async move {
                        match event {
                            async_nats::Event::Connected => {
                                tx.send_modify(|n| *n += 1);
                                tracing::info!("connected to the NATS server");
                            }
                            async_nats::Event::Disconnected => {
                                tracing::warn!("lost the NATS server; reconnecting");
                            }
                            other => tracing::debug!(event = %other, "NATS client event"),
                        }
                    }
                });
            let servers: Vec<async_nats::ServerAddr> = url2
                .servers
                .iter()
                .map(|s| {
                    s.parse::<async_nats::ServerAddr>()
                        .map_err(|e| format!("{s}: {e}"))
                })
                .collect::<Result<_, _>>()?;
            let client = tokio::time::timeout(CONNECT_TIMEOUT * 2, options.connect(servers))
                .await
                .map_err(|_| "no answer".to_string())?
                .map_err(|e| e.to_string())?;
            let mut js = jetstream::new(client.clone());
            js.set_timeout(REQUEST_TIMEOUT);
            // A server without JetStream accepts the connection but nothing the store does.
            js.query_account()
                .await
                .map_err(|e| format!("JetStream is not available: {e}"))?;
            Ok::<_, String>((client, js))
        });
        let (client, js) =
            connected.map_err(|detail| fail("connect to the NATS server", detail))?;
        Ok(Conn {
            runtime: Some(runtime),
            handle,
            client,
            js,
            server,
            connections: rx,
        })
    }

    /// The runtime's handle, for tasks that live as long as the store (heartbeats, watches).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// A backend error naming the server.
    pub fn error(&self, action: impl Into<String>, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            action: action.into(),
            server: self.server.clone(),
            detail: detail.to_string(),
            hint: HINT,
        }
    }

    /// Runs `fut` on the store's runtime and waits for it from this thread, whatever it is
    /// (an async worker of another runtime included: only this thread waits).
    pub fn block<F>(&self, fut: F) -> Result<F::Output, StoreError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| self.error("reach the server", "the store is shutting down"))
    }

    /// Runs the attempt `make()` builds until it succeeds or the server has been unreachable
    /// for [`RETRY_FOR`]; each attempt is bounded by the request timeout.
    pub fn retry<T, F, Fut>(&self, action: &str, mut make: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Fail>> + Send + 'static,
        T: Send + 'static,
    {
        let start = Instant::now();
        let mut backoff = crate::backoff::Backoff::unreachable();
        loop {
            let attempt = make();
            let outcome = self.block(async move {
                match tokio::time::timeout(REQUEST_TIMEOUT * 2, attempt).await {
                    Ok(r) => r,
                    Err(_) => Err(Fail::Transient("no answer in time".into())),
                }
            })?;
            match outcome {
                Ok(v) => return Ok(v),
                Err(Fail::Transient(detail)) => {
                    if start.elapsed() >= RETRY_FOR {
                        return Err(self.error(action, detail));
                    }
                    tracing::debug!(action, %detail, "retrying a NATS request");
                    backoff.wait();
                }
            }
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The store may be dropped inside some async runtime, where a blocking shutdown would
        // panic: let the runtime's threads go in the background.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
