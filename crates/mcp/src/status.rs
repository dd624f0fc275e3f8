//! What `troupe mcp list`, `/mcp` and the stream-json `system/init` event say about a server.

use serde::Serialize;

/// A server's state, in Claude Code's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Starting (or not started yet).
    Pending,
    /// Connected; its tools are in the pool.
    Connected,
    /// Not connected: a bad entry, a failed start, or it stopped.
    Failed,
}

impl Status {
    /// The status as shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Connected => "connected",
            Status::Failed => "failed",
        }
    }
}

/// One server as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// `stdio`, `http`, or `unknown` for an entry that did not parse.
    pub transport: &'static str,
    /// Where its entry was read.
    pub origin: String,
    /// Its state.
    pub status: Status,
    /// The troupe names of its tools while connected.
    pub tools: Vec<String>,
    /// The last thing that went wrong, if anything did.
    pub last_error: Option<String>,
}
