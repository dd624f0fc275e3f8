//! The connection: the NATS client, living on the runtime of whoever opened the store (the
//! store's traits are async, so there is no runtime of the store's own), and the one way store
//! code runs a request — bounded in time, retried while the server is away.
//!
//! An operation is the caller's own future, its retries included: a retry pauses on the
//! runtime's timer with jitter ([`Link::retry`], [`crate::backoff`]), and a compare-and-set
//! loop is an async loop in the same future, so no thread sleeps through a backoff and the
//! caller's closure is applied in place. Only [`Conn::block`] waits on a thread, and only one
//! that is no runtime's (a `Drop` outside any runtime).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use tokio::runtime::Handle;
use tokio::sync::watch;
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

/// The connection to the server, with the runtime its client lives on (the opener's).
pub struct Conn {
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
        let (tx, rx) = watch::channel(0u64);
        let url2 = url.clone();
        let connecting = async move {
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
        };
        let (client, js) = connecting
            .await
            .map_err(|detail| fail("connect to the NATS server", detail))?;
        let link = Link {
            client: client.clone(),
            server: Arc::from(server.as_str()),
        };
        Ok(Conn {
            handle: Handle::current(),
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

    /// Runs `fut` on the runtime the client lives on and waits for it from this thread, at
    /// most `limit`: only for a `Drop` outside any runtime (a lease let go as the process
    /// ends waits, briefly, for its key to be deleted). Inside a runtime it would stall a
    /// worker, so there it returns `None` at once and `fut` runs in the background.
    pub fn block<F>(&self, fut: F, limit: Duration) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if Handle::try_current().is_ok() {
            self.handle.spawn(fut);
            return None;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(limit).ok()
    }

    /// What a future needs of the connection (owned, cheap to clone).
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// Runs the attempt `make()` builds until it succeeds or the server has been unreachable
    /// for [`RETRY_FOR`] ([`Link::retry`]).
    pub async fn retry<T, F, Fut>(&self, action: &str, make: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Fail>>,
    {
        self.link.retry(action, make).await
    }
}

/// The connection as an operation's futures use it: the client and the server's name for
/// errors. Cheap to clone, so a background task owns what it needs (`'static`).
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
