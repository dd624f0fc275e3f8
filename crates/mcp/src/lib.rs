//! troupe's MCP client, a small JSON-RPC 2.0 client of its own (`rpc.rs`, `protocol.rs`;
//! decision 0032): the servers configured in Claude Code's format (`.mcp.json`, settings
//! `mcpServers`, `--mcp-config`) are started in the background over stdio (`lines.rs`),
//! streamable HTTP (`http.rs`) or legacy SSE (`sse.rs`), and their tools join every agent's tool
//! pool as `mcp__<server>__<tool>` once they are ready. One connection per server per process,
//! shared by the agents in it.
//!
//! - [`McpConfig`]: entries by precedence, `${VAR}` expansion, errors naming the server.
//! - [`McpManager`]: start-up, statuses, the tools on offer, `connect_mcp`, shutdown.
//! - [`McpPrompt`]: a server's prompts, run as `/mcp__<server>__<prompt>` commands.
//! - A crashed server's calls become error results and the next call restarts it (bounded);
//!   calls time out and are cancelled on the server when dropped (Ctrl-C).
//!
//! Must not know: teams, stores or permissions. Its tools are plain `troupe_tools::Tool`s; what
//! may run is the agent's policy's business (a server's `readOnlyHint` only lets calls run side
//! by side).

mod config;
mod connect;
#[cfg(feature = "client")]
mod connection;
#[cfg(feature = "client")]
mod event_stream;
mod expand;
#[cfg(feature = "client")]
mod http;
#[cfg(feature = "client")]
mod lines;
#[cfg(feature = "client")]
mod manager;
// Without the client the manager keeps the configured servers' names to show them failed, and
// starts nothing.
#[cfg(not(feature = "client"))]
#[path = "manager_off.rs"]
mod manager;
pub mod names;
mod options;
mod prompts;
#[cfg(feature = "client")]
mod protocol;
#[cfg(feature = "client")]
mod result;
#[cfg(feature = "client")]
mod rpc;
pub mod sdk;
#[cfg(feature = "client")]
mod sdk_transport;
#[cfg(feature = "client")]
mod server;
#[cfg(feature = "client")]
mod sse;
mod status;
#[cfg(feature = "client")]
mod stdio;
#[cfg(feature = "client")]
mod tool;

pub use config::{
    parse_server, valid_server_name, ConfigError, Lookup, McpConfig, ServerConfig, ServerEntry,
    SourceError, TransportConfig,
};
pub use connect::ConnectTool;
pub use expand::{expand, ExpandError};
pub use manager::McpManager;
pub use options::{
    McpOptions, DEFAULT_MAX_RESTARTS, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
};
pub use prompts::{McpPrompt, PromptArgument};
#[cfg(feature = "client")]
pub use result::to_output;
pub use sdk::{SdkBridge, SdkChannel};
pub use status::{ServerStatus, Status};
#[cfg(feature = "client")]
pub use stdio::log_path;
#[cfg(feature = "client")]
pub use tool::McpTool;
