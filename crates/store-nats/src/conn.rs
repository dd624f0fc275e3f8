//! The connection: a small tokio runtime of the store's own (the store's traits are
//! synchronous and may be called from any thread, async or not), the NATS client on it, and
//! the one way store code runs a request — bounded in time, retried while the server is away.
//!
//! An operation is one future on that runtime, its retries included: a retry pauses on the
//! runtime's timer with jitter ([`Link::retry`], [`crate::backoff`]), and a compare-and-set
//! loop is an async loop in the same future, so no thread sleeps through a backoff. The
//! calling thread waits once per operation ([`Conn::run`], [`Conn::block`]) for its outcome.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{oneshot, watch};
use troupe_store::StoreError;

use crate::url::{Auth, NatsUrl};

/// How long a request waits for the server's answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one attempt of an operation (a request, or a few in a row) may take before it
/// counts as unanswered and is tried again.
pub const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);

/// How long an operation keeps retrying while the server is unreachable (restarting, a network
/// blip) before it fails: the client reconnects meanwhile, on its own.
pub const RETRY_FOR: Duration = Duration::from_secs(30);

/// How long connecting may take before the server counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How many times opening the store asks JetStream for the account when it does not answer
/// within [`REQUEST_TIMEOUT`].
const ACCOUNT_TRIES: u32 = 3;

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
    link: Link,
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
    pub async fn connect(url: &NatsUrl) -> Result<Conn, StoreError> {
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
        let connecting = handle.spawn(async move {
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
            // A server without JetStream accepts the connection but nothing the store does,
            // and says so at once ("no responders"). One slow to answer (a cluster electing its
            // meta leader, a loaded machine) is asked again, a bounded number of times.
            let mut tries = 1;
            loop {
                match js.query_account().await {
                    Ok(_) => break,
                    Err(e)
                        if matches!(e.kind(), jetstream::context::AccountErrorKind::TimedOut)
                            && tries < ACCOUNT_TRIES =>
                    {
                        tracing::warn!(tries, "JetStream did not answer in time; asking again");
                        tries += 1;
                    }
                    Err(e) => return Err(format!("JetStream is not available: {e}")),
                }
            }
            Ok::<_, String>((client, js))
        });
        let connected = match connecting.await {
            Ok(outcome) => outcome,
            Err(e) => Err(e.to_string()),
        };
        let (client, js) = match connected {
            Ok(both) => both,
            Err(detail) => {
                // Dropped in an async context: its threads go in the background.
                runtime.shutdown_background();
                return Err(fail("connect to the NATS server", detail));
            }
        };
        let link = Link {
            client: client.clone(),
            server: Arc::from(server.as_str()),
        };
        Ok(Conn {
            runtime: Some(runtime),
            handle,
            client,
            js,
            server,
            connections: rx,
            link,
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

    /// Runs `fut` on the store's runtime and waits for it from this thread: only for `Drop`,
    /// which cannot await (a lease let go waits, briefly, for its key to be deleted).
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

    /// Runs `fut` on the store's runtime and awaits its output: neither a worker of the
    /// caller's nor any thread waits for the server.
    pub async fn on_runtime<F>(&self, fut: F) -> Result<F::Output, StoreError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.handle.spawn(fut).await {
            Ok(output) => Ok(output),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(self.error("reach the server", "the store is shutting down")),
        }
    }

    /// Runs `fut` — a whole operation, its retries included — on the store's runtime and
    /// awaits its outcome.
    pub async fn run<T, F>(&self, fut: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.on_runtime(fut).await?
    }

    /// Runs the operation `op` builds on the store's runtime, like [`Conn::run`], for a
    /// caller's closure `f` that cannot go there (the store traits hand a `&mut dyn FnMut`:
    /// borrowed). The operation asks for `f` through its [`Caller`], and the caller's task,
    /// awaiting one channel for the outcome, applies `f` and hands the result back. So a
    /// compare-and-set loop — read, `f`, write, on a lost race pause and again — is one
    /// future. An error from `f` (a refused update) is the operation's outcome at once: it is
    /// returned without a further round trip (the future then finds no answer and ends).
    pub async fn run_applying<A, B, T, Fut>(
        &self,
        mut f: impl FnMut(A) -> Result<B, StoreError> + Send,
        op: impl FnOnce(Caller<A, B, T>) -> Fut,
    ) -> Result<T, StoreError>
    where
        A: Send + 'static,
        B: Send + 'static,
        T: Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let done = tx.clone();
        let fut = op(Caller {
            tx,
            link: self.link.clone(),
        });
        self.handle.spawn(async move {
            let _ = done.send(Call::Done(fut.await));
        });
        loop {
            match rx.recv().await {
                Some(Call::Apply(value, reply)) => {
                    let _ = reply.send(f(value)?);
                }
                Some(Call::Done(outcome)) => return outcome,
                None => {
                    return Err(self.error("reach the server", "the store is shutting down"));
                }
            }
        }
    }

    /// What a future on the store's runtime needs of the connection (owned, cheap to clone).
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// Runs the attempt `make()` builds until it succeeds or the server has been unreachable
    /// for [`RETRY_FOR`] ([`Link::retry`]): the whole loop is one future on the store's
    /// runtime, awaited once.
    pub async fn retry<T, F, Fut>(&self, action: &str, make: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, Fail>> + Send + 'static,
        T: Send + 'static,
    {
        self.retry_within(action, ATTEMPT_LIMIT, make).await
    }

    /// [`Conn::retry`] for an attempt that is many requests (a batch of acks): each attempt
    /// may take up to `attempt` before it counts as unanswered.
    pub async fn retry_within<T, F, Fut>(
        &self,
        action: &str,
        attempt: Duration,
        make: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, Fail>> + Send + 'static,
        T: Send + 'static,
    {
        let (link, action) = (self.link.clone(), action.to_string());
        self.run(async move { link.retry_within(&action, attempt, make).await })
            .await
    }
}

/// A message from an operation's future to the thread that waits for it.
enum Call<A, B, T> {
    /// Apply the caller's closure to this and answer.
    Apply(A, oneshot::Sender<B>),
    /// The operation's outcome.
    Done(Result<T, StoreError>),
}

/// An operation's way to the caller's closure ([`Conn::run_applying`]).
pub struct Caller<A, B, T> {
    tx: tokio::sync::mpsc::UnboundedSender<Call<A, B, T>>,
    link: Link,
}

impl<A, B, T> Caller<A, B, T> {
    /// The connection, for the operation's own requests.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The caller's closure applied to `value`, on the caller's thread.
    pub async fn apply(&self, value: A) -> Result<B, StoreError> {
        let (tx, rx) = oneshot::channel();
        // Only when the waiting thread is gone (the closure refused, and that is the outcome;
        // or it panicked): no one reads this.
        let gone = || {
            self.link
                .error("apply an update", "the waiting thread went away")
        };
        self.tx.send(Call::Apply(value, tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

/// The connection as futures on the store's runtime use it: the client and the
/// server's name for errors. Cheap to clone, so a future owns what it needs (`'static`).
#[derive(Clone)]
pub struct Link {
    /// The client.
    pub client: async_nats::Client,
    server: Arc<str>,
}

impl Link {
    /// A backend error naming the server.
    pub fn error(&self, action: impl Into<String>, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            action: action.into(),
            server: self.server.to_string(),
            detail: detail.to_string(),
            hint: HINT,
        }
    }

    /// Runs the attempt `make()` builds until it succeeds or the server has been unreachable
    /// for [`RETRY_FOR`]; each attempt is bounded by the request timeout. Between attempts it
    /// pauses on the runtime's timer (`tokio::time::sleep`, with jitter from [`Backoff`]), so
    /// a retry holds no thread: neither the caller's nor one of the runtime's.
    ///
    /// [`Backoff`]: crate::backoff::Backoff
    pub async fn retry<T, F, Fut>(&self, action: &str, make: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Fail>>,
    {
        self.retry_within(action, ATTEMPT_LIMIT, make).await
    }

    /// [`Link::retry`] with each attempt bounded by `attempt` instead of [`ATTEMPT_LIMIT`].
    pub async fn retry_within<T, F, Fut>(
        &self,
        action: &str,
        attempt: Duration,
        mut make: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Fail>>,
    {
        let start = Instant::now();
        let mut backoff = crate::backoff::Backoff::unreachable();
        loop {
            let outcome = match tokio::time::timeout(attempt, make()).await {
                Ok(r) => r,
                Err(_) => Err(Fail::Transient("no answer in time".into())),
            };
            match outcome {
                Ok(v) => return Ok(v),
                Err(Fail::Transient(detail)) => {
                    if start.elapsed() >= RETRY_FOR {
                        return Err(self.error(action, detail));
                    }
                    tracing::debug!(action, %detail, "retrying a NATS request");
                    tokio::time::sleep(backoff.next_pause()).await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A link whose client never reaches a server (nothing here sends through it).
    async fn idle_link() -> Link {
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connect("127.0.0.1:1")
            .await
            .unwrap();
        Link {
            client,
            server: Arc::from("nats://127.0.0.1:1"),
        }
    }

    /// The pauses between attempts are the runtime's timer, not a thread's sleep: on a
    /// runtime of one thread, another task keeps running all through a retry's pauses (a
    /// thread sleep would have stopped it until the retry was done).
    #[test]
    fn retry_pauses_leave_the_runtime_thread_free() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let link = idle_link().await;
            let ticks = Arc::new(AtomicU32::new(0));
            let ticker = tokio::spawn({
                let ticks = ticks.clone();
                async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        ticks.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            tokio::task::yield_now().await;
            let attempts = AtomicU32::new(0);
            let started = Instant::now();
            let got = link
                .retry("test", || {
                    let n = attempts.fetch_add(1, Ordering::Relaxed);
                    async move {
                        if n < 3 {
                            Err(Fail::Transient("not yet".into()))
                        } else {
                            Ok(n)
                        }
                    }
                })
                .await
                .unwrap();
            let (took, ticked) = (started.elapsed(), ticks.load(Ordering::Relaxed));
            ticker.abort();
            assert_eq!(got, 3);
            // Three pauses of the unreachable backoff: at least 10 + 20 + 40 ms.
            assert!(took >= Duration::from_millis(70), "{took:?}");
            // The ticker ran through them (1 ms ticks; generous for a loaded machine).
            assert!(ticked >= 10, "only {ticked} ticks in {took:?}");
        });
    }
}
