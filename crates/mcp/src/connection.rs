//! One live MCP session with a server: the transport (a child's pipes, streamable HTTP,
//! legacy SSE or the SDK's channel), the `initialize` handshake, and what the session saw
//! (its [`Signals`]: a `tools/list_changed` notification is counted the moment it is read,
//! before any response behind it is delivered, so the call that changed the list is followed
//! by a model call that sees the new list).

use crate::config::{ServerConfig, TransportConfig};
use crate::options::McpOptions;
use crate::protocol::ServerInfo;
use crate::rpc::{Link, Session};
use crate::stdio::{self, ServerProcess, Slots};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) use crate::rpc::Signals;

/// A connected server.
pub(crate) struct Connection {
    session: Session,
    /// What the server said of itself in `initialize`.
    info: ServerInfo,
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
        match &config.transport {
            TransportConfig::Stdio { command, args, env } => {
                let (mut process, stdout, stdin) =
                    stdio::spawn(&config.name, command, args, env, workspace, log_dir, slots)
                        .await?;
                match start(crate::lines::link(stdout, stdin)).await {
                    Ok((session, info, signals)) => Ok(Connection {
                        session,
                        info,
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
                            None => format!("initialize failed: {e}"),
                        })
                    }
                }
            }
            TransportConfig::Sdk => {
                let bridge = options.sdk.as_ref().ok_or(
                    "an in-process SDK server (`\"type\": \"sdk\"`) is reached only through the Agent SDK's control protocol: run troupe with --input-format stream-json from the SDK",
                )?;
                let link = crate::sdk_transport::link(&config.name, bridge);
                let (session, info, signals) = start(link)
                    .await
                    .map_err(|e| format!("initialize through the SDK failed: {e}"))?;
                Ok(Connection::remote(session, info, signals))
            }
            TransportConfig::Sse { url, headers } => {
                install_crypto();
                let link = crate::sse::connect(url, headers)
                    .await
                    .map_err(|e| format!("{url}: {e}"))?;
                let (session, info, signals) = start(link)
                    .await
                    .map_err(|e| format!("initialize at {url} failed: {e}"))?;
                Ok(Connection::remote(session, info, signals))
            }
            TransportConfig::Http { url, headers } => {
                install_crypto();
                let link = crate::http::link(url, headers)?;
                let (session, info, signals) = start(link)
                    .await
                    .map_err(|e| format!("initialize at {url} failed: {e}"))?;
                Ok(Connection::remote(session, info, signals))
            }
        }
    }

    /// A connection without a process of its own.
    fn remote(session: Session, info: ServerInfo, signals: Arc<Signals>) -> Connection {
        Connection {
            session,
            info,
            process: tokio::sync::Mutex::new(None),
            signals,
        }
    }

    /// The session's request side.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// What the server said of itself in `initialize`.
    pub(crate) fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// Whether the server's side has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.signals.closed.load(Ordering::SeqCst) || self.session.is_closed()
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

/// A session over `link`, initialized.
async fn start(link: Link) -> Result<(Session, ServerInfo, Arc<Signals>), String> {
    let signals = Arc::new(Signals::default());
    let session = Session::new(link, signals.clone());
    let info = session.initialize().await?;
    tracing::debug!(
        server = %info.server_info,
        version = info.protocol_version,
        "MCP session initialized"
    );
    Ok((session, info, signals))
}

/// How long a message about a closed server waits for its exit status.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// rustls needs one process-wide crypto provider: ring, which troupe's model client already
/// builds. Installing it again is a no-op.
pub(crate) fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
