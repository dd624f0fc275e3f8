//! One live MCP session with a server, on rmcp: the transport (a child's pipes, streamable
//! HTTP, legacy SSE or the SDK's channel), the `initialize` handshake, and a watch on what arrives — a `tools/list_changed`
//! notification is counted the moment it is read, before any response behind it is delivered,
//! so the call that changed the list is followed by a model call that sees the new list.

use crate::config::{ServerConfig, TransportConfig};
use crate::options::McpOptions;
use crate::sdk_transport::SdkTransport;
use crate::sse::SseTransport;
use crate::stdio::{self, ServerProcess, Slots};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, JsonRpcMessage, ServerNotification,
};
use rmcp::service::{RoleClient, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, Peer, ServiceExt};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What a connection has seen of its server.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// `tools/list_changed` notifications received.
    pub(crate) list_changes: AtomicU64,
    /// Set when the server's side of the transport ended (the process exited, the stream closed).
    pub(crate) closed: AtomicBool,
}

/// troupe's side of the session: it answers nothing the server could ask (no sampling, roots or
/// elicitation are offered), and says who it is.
#[derive(Debug, Clone)]
pub(crate) struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("troupe", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A transport that reports list changes and its end as it reads them.
struct Watched<T> {
    inner: T,
    signals: Arc<Signals>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let signals = self.signals.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            match &message {
                None => signals.closed.store(true, Ordering::SeqCst),
                Some(JsonRpcMessage::Notification(n)) => {
                    if let ServerNotification::ToolListChangedNotification(_) = n.notification {
                        signals.list_changes.fetch_add(1, Ordering::SeqCst);
                    }
                }
                Some(_) => {}
            }
            message
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A connected server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Client>,
    /// The stdio server's process (none over HTTP); dropping it kills the process group.
    process: tokio::sync::Mutex<Option<ServerProcess>>,
    pub(crate) signals: Arc<Signals>,
}

impl Connection {
    /// Starts the transport and performs the `initialize` handshake. Not bounded here: the
    /// caller puts its start-up timeout around it.
    pub(crate) async fn open(
        config: &ServerConfig,
        options: &McpOptions,
        slots: &Slots,
    ) -> Result<Connection, String> {
        let (workspace, log_dir) = (options.workspace.as_path(), options.log_dir.as_path());
        let signals = Arc::new(Signals::default());
        match &config.transport {
            TransportConfig::Stdio { command, args, env } => {
                let (mut process, stdout, stdin) =
                    stdio::spawn(&config.name, command, args, env, workspace, log_dir, slots)
                        .await?;
                let transport = Watched {
                    inner: AsyncRwTransport::<RoleClient, _, _>::new_client(stdout, stdin),
                    signals: signals.clone(),
                };
                match Client.serve(transport).await {
                    Ok(service) => Ok(Connection {
                        service,
                        process: tokio::sync::Mutex::new(Some(process)),
                        signals,
                    }),
                    Err(e) => {
                        let exited = process.wait_exit(EXIT_GRACE).await;
                        Err(match exited {
                            Some(status) => format!(
                                "`{command}` exited ({status}) before it finished initialize; see {}",
                                stdio::log_path(log_dir, &config.name).display()
                            ),
                            None => format!("initialize failed: {}", init_error(&e)),
                        })
                    }
                }
            }
            TransportConfig::Sdk => {
                let bridge = options.sdk.as_ref().ok_or(
                    "an in-process SDK server (`\"type\": \"sdk\"`) is reached only through the Agent SDK's control protocol: run troupe with --input-format stream-json from the SDK",
                )?;
                let transport = Watched {
                    inner: SdkTransport::new(&config.name, bridge),
                    signals: signals.clone(),
                };
                let service = Client
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize through the SDK failed: {e}"))?;
                Ok(Connection {
                    service,
                    process: tokio::sync::Mutex::new(None),
                    signals,
                })
            }
            TransportConfig::Sse { url, headers } => {
                install_crypto();
                let inner = SseTransport::connect(url, headers)
                    .await
                    .map_err(|e| format!("{url}: {e}"))?;
                serve_remote(inner, signals, url).await
            }
            TransportConfig::Http { url, headers } => {
                serve_remote(http_transport(url, headers)?, signals, url).await
            }
        }
    }

    /// The session's request side.
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the server's side has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.signals.closed.load(Ordering::SeqCst) || self.service.is_closed()
    }

    /// How the server process ended, waiting briefly for it (its pipe usually closes a moment
    /// before it exits); `None` over HTTP or when it has not ended.
    pub(crate) async fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let mut process = self.process.lock().await;
        let process = process.as_mut()?;
        match process.exit_status() {
            Some(status) => Some(status),
            None => process.wait_exit(EXIT_GRACE).await,
        }
    }
}

/// An initialize failure in words: the transport's own error and what it was doing, never the
/// transport's Rust type name (rmcp's `Transport [<type>] error: …`).
fn init_error(e: &rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            // The HTTP client's error keeps its causes (refused, DNS, TLS) to itself in rmcp's
            // wrapper: asked for directly.
            type HttpError =
                rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;
            let why = match error.error.downcast_ref::<HttpError>() {
                Some(HttpError::Client(e)) => causes(e),
                _ => causes(&*error.error),
            };
            format!("{why} (while trying to {context})")
        }
        other => other.to_string(),
    }
}

/// An error and its sources, `outer: inner: innermost`, repeats left out.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = inner.source();
    }
    parts.join(": ")
}

/// How long a message about a closed server waits for its exit status.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The streamable HTTP transport for `url` with `headers` on every request.
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    install_crypto();
    let mut custom = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value =
            http::HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        custom.insert(name, value);
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// rustls needs one process-wide crypto provider: ring, which troupe's model client already
/// builds. Installing it again is a no-op.
fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Initialises a server reached over the network at `url` through `inner`, watched by
/// `signals`.
async fn serve_remote<T>(inner: T, signals: Arc<Signals>, url: &str) -> Result<Connection, String>
where
    T: Transport<RoleClient> + Send + 'static,
{
    let transport = Watched {
        inner,
        signals: signals.clone(),
    };
    let service = Client
        .serve(transport)
        .await
        .map_err(|e| format!("initialize at {url} failed: {}", init_error(&e)))?;
    Ok(Connection {
        service,
        process: tokio::sync::Mutex::new(None),
        signals,
    })
}
