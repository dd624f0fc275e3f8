//! One configured server's life in this process: not started → connecting → connected, or
//! failed (a bad entry, a start-up that failed or timed out, a crash). A crash keeps its tools
//! in the pool and the next call restarts it, a bounded number of times; `connect_mcp` starts
//! over. Every agent of the process shares the one connection.

use crate::config::ServerEntry;
use crate::connection::Connection;
use crate::names::tool_name;
use crate::options::{secs, McpOptions};
use crate::prompts::{prompt_text, McpPrompt};
use crate::protocol::RemoteTool;
use crate::result::to_output;
use crate::rpc::RpcError;
use crate::status::{ServerStatus, Status};
use crate::stdio::{log_path, Slots};
use crate::tool::McpTool;
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use troupe_tools::{DynTool, ToolOutput};

/// Where a server is in its life.
enum Phase {
    /// Not started yet.
    Idle,
    /// A connect is under way (its task holds `Server::connecting`).
    Connecting,
    /// Connected; `listed` is the count of list changes its tool list reflects.
    Connected { conn: Arc<Connection>, listed: u64 },
    /// Not connected, and why.
    Failed(Failure),
    /// Shut down with troupe.
    Stopped,
}

/// Why a server is not connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Its entry is invalid.
    Config,
    /// It did not start, or did not finish `initialize` in time.
    Startup,
    /// It stopped while connected; the next call restarts it.
    Crashed,
    /// It stopped too often; only `connect_mcp` starts it again.
    GaveUp,
}

struct State {
    phase: Phase,
    /// The tools of its last listing (kept through a crash, so a call can bring it back).
    tools: Arc<Vec<DynTool>>,
    /// Its prompts, listed when it connected (none unless it declares the capability).
    prompts: Arc<Vec<McpPrompt>>,
    last_error: Option<String>,
    /// Automatic restarts so far (reset by `connect_mcp`).
    restarts: u32,
}

/// One configured server.
pub(crate) struct Server {
    pub(crate) entry: ServerEntry,
    options: Arc<McpOptions>,
    state: Mutex<State>,
    /// Held for the whole of a connect, so there is one at a time and others can wait for it.
    connecting: tokio::sync::Mutex<()>,
    /// Held while the tool list is fetched again after a change.
    listing: tokio::sync::Mutex<()>,
    /// Told about every change of phase (for `troupe mcp list` waiting for start-up).
    changes: watch::Sender<u64>,
    /// Every server process of the client, for its exit.
    slots: Arc<Slots>,
}

/// What a call finds when it looks for a connection.
enum Found {
    Live(Arc<Connection>),
    Dead(Arc<Connection>),
    Connecting,
    Restartable(u32),
    Down(Option<Failure>, Option<String>),
}

impl Server {
    /// A server for `entry`, not started (or failed at once, when the entry is invalid).
    pub(crate) fn new(
        entry: ServerEntry,
        options: Arc<McpOptions>,
        changes: watch::Sender<u64>,
        slots: Arc<Slots>,
    ) -> Arc<Server> {
        let (phase, last_error) = match &entry.config {
            Ok(_) => (Phase::Idle, None),
            Err(e) => (Phase::Failed(Failure::Config), Some(e.to_string())),
        };
        Arc::new(Server {
            entry,
            options,
            state: Mutex::new(State {
                phase,
                tools: Arc::new(Vec::new()),
                prompts: Arc::new(Vec::new()),
                last_error,
                restarts: 0,
            }),
            connecting: tokio::sync::Mutex::new(()),
            listing: tokio::sync::Mutex::new(()),
            changes,
            slots,
        })
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.entry.name
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the state half-written: every update is one assignment.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Whether it is waiting to start or starting (`troupe mcp list` waits for those).
    pub(crate) fn is_starting(&self) -> bool {
        matches!(self.state().phase, Phase::Idle | Phase::Connecting)
    }

    /// Whether it has not been started yet.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.state().phase, Phase::Idle)
    }

    /// Its status for `troupe mcp list`, `/mcp` and `system/init`.
    pub(crate) fn status(&self) -> ServerStatus {
        let state = self.state();
        let (status, tools) = match &state.phase {
            Phase::Idle | Phase::Connecting => (Status::Pending, Vec::new()),
            Phase::Connected { .. } => (
                Status::Connected,
                state.tools.iter().map(|t| t.name().to_string()).collect(),
            ),
            Phase::Failed(_) | Phase::Stopped => (Status::Failed, Vec::new()),
        };
        ServerStatus {
            name: self.entry.name.clone(),
            transport: self.entry.kind(),
            origin: self.entry.origin.clone(),
            status,
            tools,
            last_error: state.last_error.clone(),
        }
    }

    /// The tools on offer: those of a connected server, and of a crashed one (a call restarts
    /// it).
    pub(crate) fn tools(&self) -> Arc<Vec<DynTool>> {
        let state = self.state();
        match state.phase {
            Phase::Connected { .. } | Phase::Failed(Failure::Crashed) => state.tools.clone(),
            _ => Arc::new(Vec::new()),
        }
    }

    /// Connects, unless it is connected already; returns the number of tools. `manual` (from
    /// `connect_mcp`) also clears the restart count.
    pub(crate) async fn connect(self: &Arc<Self>, manual: bool) -> Result<usize, String> {
        let config = match &self.entry.config {
            Ok(config) => config,
            Err(e) => return Err(e.to_string()),
        };
        let _one = self.connecting.lock().await;
        {
            let mut state = self.state();
            match &state.phase {
                Phase::Connected { conn, .. } if !conn.is_closed() => return Ok(state.tools.len()),
                Phase::Stopped => return Err("troupe is shutting down".into()),
                Phase::Failed(Failure::Crashed) if !manual => state.restarts += 1,
                _ => {}
            }
            if manual {
                state.restarts = 0;
            }
            state.phase = Phase::Connecting;
        }
        self.changed();
        // A connect abandoned half-way (its caller dropped) must not leave the server
        // "connecting" for ever.
        let mut unfinished = Unfinished(Some(self.as_ref()));
        let options = &self.options;
        let opened = tokio::time::timeout(options.startup_timeout, async {
            let conn = Connection::open(config, options, &self.slots);
            let conn = Arc::new(conn.await?);
            let (listed, tools) = self.list(&conn).await?;
            let prompts = self.list_prompts(&conn).await;
            Ok::<_, String>((conn, listed, tools, prompts))
        })
        .await;
        unfinished.0 = None;
        let result = {
            let mut state = self.state();
            if matches!(state.phase, Phase::Stopped) {
                return Err("troupe is shutting down".into());
            }
            match opened {
                Ok(Ok((conn, listed, tools, prompts))) => {
                    let count = tools.len();
                    state.phase = Phase::Connected { conn, listed };
                    state.tools = Arc::new(tools);
                    state.prompts = Arc::new(prompts);
                    state.last_error = None;
                    Ok(count)
                }
                Ok(Err(message)) => {
                    state.phase = Phase::Failed(Failure::Startup);
                    state.last_error = Some(message.clone());
                    Err(message)
                }
                Err(_) => {
                    let message = format!(
                        "did not finish initialize within {} (setting mcp_startup_timeout)",
                        secs(options.startup_timeout)
                    );
                    state.phase = Phase::Failed(Failure::Startup);
                    state.last_error = Some(message.clone());
                    Err(message)
                }
            }
        };
        self.changed();
        if let Err(message) = &result {
            tracing::warn!(server = self.name(), "MCP server did not start: {message}");
        }
        result
    }

    /// Lists the server's tools as troupe tools, with the list-change count it reflects.
    async fn list(self: &Arc<Self>, conn: &Connection) -> Result<(u64, Vec<DynTool>), String> {
        let listed = conn.signals.list_changes.load(Ordering::SeqCst);
        let remote = conn
            .session()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let mut tools: Vec<DynTool> = Vec::with_capacity(remote.len());
        for tool in remote {
            let name = tool_name(self.name(), &tool.name);
            if tools.iter().any(|t| t.name() == name) {
                tracing::warn!(server = self.name(), tool = %tool.name, "two tools map to {name}; keeping the first");
                continue;
            }
            let read_only = tool.read_only();
            let RemoteTool {
                name: remote,
                description,
                input_schema,
                ..
            } = tool;
            let description = description
                .unwrap_or_else(|| format!("Tool `{remote}` of MCP server `{}`.", self.name()));
            tools.push(Arc::new(McpTool::new(
                Arc::downgrade(self),
                name,
                remote,
                description,
                Value::Object(input_schema),
                read_only,
            )));
        }
        Ok((listed, tools))
    }

    /// The server's prompts, when it declares the prompts capability; a listing that fails is
    /// a warning and no prompts, never a failed start.
    async fn list_prompts(&self, conn: &Connection) -> Vec<McpPrompt> {
        if !conn.info().has_prompts() {
            return Vec::new();
        }
        match conn.session().list_all_prompts().await {
            Ok(prompts) => {
                let mut listed: Vec<McpPrompt> = Vec::with_capacity(prompts.len());
                for prompt in &prompts {
                    let prompt = McpPrompt::new(self.name(), prompt);
                    if !listed.iter().any(|p| p.name == prompt.name) {
                        listed.push(prompt);
                    }
                }
                listed
            }
            Err(e) => {
                tracing::warn!(server = self.name(), "prompts/list failed: {e}");
                Vec::new()
            }
        }
    }

    /// The prompts of a connected server.
    pub(crate) fn prompts(&self) -> Arc<Vec<McpPrompt>> {
        let state = self.state();
        match state.phase {
            Phase::Connected { .. } => state.prompts.clone(),
            _ => Arc::new(Vec::new()),
        }
    }

    /// `prompts/get` for `prompt` with `arguments`: the text of the messages it returns,
    /// bounded by the call timeout.
    pub(crate) async fn get_prompt(
        self: &Arc<Self>,
        prompt: &McpPrompt,
        arguments: Map<String, Value>,
    ) -> Result<String, String> {
        let conn = self.ready().await?;
        let timeout = self.options.tool_timeout;
        let get = conn.session().get_prompt(&prompt.remote, arguments);
        match tokio::time::timeout(timeout, get).await {
            Err(_) => Err(format!(
                "/{}: the server did not answer prompts/get within {} (setting mcp_tool_timeout)",
                prompt.name,
                secs(timeout)
            )),
            Ok(Err(RpcError::Server { message, .. })) => {
                Err(format!("/{} failed: {message}", prompt.name))
            }
            Ok(Err(other)) => Err(format!("/{} failed: {other}", prompt.name)),
            Ok(Ok(result)) => Ok(prompt_text(&result)),
        }
    }

    /// Fetches the tool list again when the server said it changed; bounded by the call timeout.
    pub(crate) async fn refresh_if_stale(self: &Arc<Self>) {
        let stale = |state: &State| match &state.phase {
            Phase::Connected { conn, listed } => {
                (conn.signals.list_changes.load(Ordering::SeqCst) != *listed).then(|| conn.clone())
            }
            _ => None,
        };
        if stale(&self.state()).is_none() {
            return;
        }
        let _one = self.listing.lock().await;
        let Some(conn) = stale(&self.state()) else {
            return; // another agent's refresh did it meanwhile
        };
        match tokio::time::timeout(self.options.tool_timeout, self.list(&conn)).await {
            Ok(Ok((listed, tools))) => {
                let mut state = self.state();
                if let Phase::Connected {
                    conn: current,
                    listed: seen,
                } = &mut state.phase
                {
                    if Arc::ptr_eq(current, &conn) {
                        *seen = listed;
                        state.tools = Arc::new(tools);
                    }
                }
            }
            Ok(Err(message)) => {
                tracing::warn!(server = self.name(), "refreshing the tool list: {message}")
            }
            Err(_) => tracing::warn!(server = self.name(), "tools/list did not answer in time"),
        }
    }

    /// Calls `remote` (troupe name `tool`) with `input`.
    pub(crate) async fn call(
        self: &Arc<Self>,
        tool: &str,
        remote: &str,
        input: Value,
    ) -> ToolOutput {
        let conn = match self.ready().await {
            Ok(conn) => conn,
            Err(message) => return ToolOutput::error(message),
        };
        let Value::Object(arguments) = input else {
            return ToolOutput::error(format!("invalid input for {tool}: expected a JSON object"));
        };
        // Dropping the call (its timeout, or Ctrl-C dropping the turn) sends
        // `notifications/cancelled` to the server.
        let timeout = self.options.tool_timeout;
        let call = conn.session().call_tool(remote, arguments);
        match tokio::time::timeout(timeout, call).await {
            Err(_) => ToolOutput::error(format!(
                "{tool} did not answer within {} and was cancelled (setting mcp_tool_timeout)",
                secs(timeout)
            )),
            Ok(Ok(result)) if result.is_object() => to_output(&result),
            Ok(Ok(result)) => ToolOutput::error(format!("{tool}: unreadable result: {result}")),
            Ok(Err(err)) => {
                if err.is_gone() || conn.is_closed() {
                    let why = self.crashed(&conn).await;
                    ToolOutput::error(format!(
                        "MCP server `{}` stopped while running {tool} ({why}). troupe restarts it on the next call of its tools (at most {} times){}",
                        self.name(),
                        self.options.max_restarts,
                        self.log_hint()
                    ))
                } else {
                    match err {
                        RpcError::Server { message, .. } => {
                            ToolOutput::error(format!("{tool} failed: {message}"))
                        }
                        other => ToolOutput::error(format!("{tool} failed: {other}")),
                    }
                }
            }
        }
    }

    /// Where a stdio server's stderr goes, as a sentence tail.
    fn log_hint(&self) -> String {
        match self.entry.kind() {
            "stdio" => format!(
                "; its stderr is in {}",
                log_path(&self.options.log_dir, self.name()).display()
            ),
            _ => String::new(),
        }
    }

    /// A live connection for a call: the current one, the one being made, or a restart of a
    /// crashed server (bounded).
    async fn ready(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        let name = self.name().to_string();
        // Each pass changes the phase or returns; a few cover a crash found, then a restart.
        for _ in 0..4 {
            let found = {
                let state = self.state();
                match &state.phase {
                    Phase::Connected { conn, .. } if conn.is_closed() => Found::Dead(conn.clone()),
                    Phase::Connected { conn, .. } => Found::Live(conn.clone()),
                    Phase::Connecting => Found::Connecting,
                    Phase::Failed(Failure::Crashed) => Found::Restartable(state.restarts),
                    Phase::Failed(failure) => Found::Down(Some(*failure), state.last_error.clone()),
                    Phase::Idle | Phase::Stopped => Found::Down(None, state.last_error.clone()),
                }
            };
            match found {
                Found::Live(conn) => return Ok(conn),
                Found::Dead(conn) => {
                    self.crashed(&conn).await;
                }
                Found::Connecting => {
                    // The connect under way holds the lock until it is done (bounded by the
                    // start-up timeout).
                    drop(self.connecting.lock().await);
                }
                Found::Restartable(restarts) if restarts < self.options.max_restarts => {
                    tracing::info!(server = %name, "restarting the MCP server after it stopped");
                    if let Err(e) = self.connect(false).await {
                        return Err(format!(
                            "MCP server `{name}` stopped and could not be restarted: {e}{}",
                            self.log_hint()
                        ));
                    }
                }
                Found::Restartable(restarts) => {
                    {
                        let mut state = self.state();
                        state.phase = Phase::Failed(Failure::GaveUp);
                        state.tools = Arc::new(Vec::new());
                    }
                    self.changed();
                    return Err(format!(
                        "MCP server `{name}` stopped {} times; troupe no longer restarts it by itself. Call connect_mcp with {{\"name\": \"{name}\"}} to start it again",
                        restarts + 1
                    ));
                }
                Found::Down(failure, last_error) => {
                    let why = match (failure, last_error) {
                        (Some(Failure::Config), Some(e)) => return Err(e),
                        (_, Some(e)) => format!(" (last error: {e})"),
                        (_, None) => String::new(),
                    };
                    return Err(format!(
                        "MCP server `{name}` is not connected{why}. Call connect_mcp with {{\"name\": \"{name}\"}} to try again"
                    ));
                }
            }
        }
        Err(format!("MCP server `{name}` keeps stopping; call connect_mcp with {{\"name\": \"{name}\"}} to start it again"))
    }

    /// Records that `conn` ended (if it is still the current connection) and says how.
    async fn crashed(&self, conn: &Arc<Connection>) -> String {
        let why = match conn.exit_status().await {
            Some(status) => format!("it exited, {status}"),
            None => "its connection closed".to_string(),
        };
        {
            let mut state = self.state();
            if let Phase::Connected { conn: current, .. } = &state.phase {
                if Arc::ptr_eq(current, conn) {
                    state.phase = Phase::Failed(Failure::Crashed);
                    state.last_error = Some(format!("stopped: {why}"));
                }
            }
        }
        self.changed();
        tracing::warn!(server = self.name(), "MCP server stopped: {why}");
        why
    }

    /// Drops the connection (its process is killed with its group) and refuses new ones.
    pub(crate) fn shutdown(&self) {
        let old = {
            let mut state = self.state();
            let old = std::mem::replace(&mut state.phase, Phase::Stopped);
            if matches!(old, Phase::Idle | Phase::Connecting) {
                state.last_error = Some("not started (run ended)".to_string());
            }
            old
        };
        drop(old);
        self.changed();
    }
}

/// Marks a connect that did not finish (its future was dropped) as a failed start.
struct Unfinished<'a>(Option<&'a Server>);

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let Some(server) = self.0 else {
            return;
        };
        {
            let mut state = server.state();
            if matches!(state.phase, Phase::Connecting) {
                state.phase = Phase::Failed(Failure::Startup);
                state.last_error = Some("the connect was interrupted".to_string());
            }
        }
        server.changed();
    }
}
