//! How the client behaves: where servers run and log, and how long it waits for them.

use std::path::PathBuf;
use std::time::Duration;

/// How long a tool call may take when no setting says otherwise.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Automatic restarts of a server that stopped, before only `connect_mcp` starts it again.
pub const DEFAULT_MAX_RESTARTS: u32 = 3;

/// The client's settings.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// Where stdio servers run (the workspace root).
    pub workspace: PathBuf,
    /// Where stdio servers' stderr goes, one `<server>.log` each (`.troupe/logs/mcp`).
    pub log_dir: PathBuf,
    /// How long one tool call may take (setting `mcp_tool_timeout`).
    pub tool_timeout: Duration,
    /// How long a server may take to start (setting `mcp_startup_timeout`).
    pub startup_timeout: Duration,
    /// Automatic restarts after a server stopped.
    pub max_restarts: u32,
    /// The channel to a controlling process's in-process servers (`"type": "sdk"`); without
    /// it such an entry cannot connect.
    pub sdk: Option<crate::sdk::SdkBridge>,
}

impl McpOptions {
    /// The defaults for a workspace: logs under `<workspace>/.troupe/logs/mcp`.
    pub fn new(workspace: PathBuf) -> McpOptions {
        McpOptions {
            log_dir: workspace.join(".troupe").join("logs").join("mcp"),
            workspace,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_restarts: DEFAULT_MAX_RESTARTS,
            sdk: None,
        }
    }
}

/// A duration as messages state it: `60 s`, `0.5 s`.
#[cfg(feature = "client")]
pub(crate) fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    match secs.fract() == 0.0 {
        true => format!("{secs:.0} s"),
        false => format!("{secs} s"),
    }
}
