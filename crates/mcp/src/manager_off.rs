//! The manager of a build without the client (the `client` feature off): the same surface as
//! the client's, starting nothing. Every configured server shows as failed with the reason, so
//! `troupe mcp list`, `/mcp` and stream-json's `system/init` say what happened instead of an
//! empty list; it offers no tools and no prompts, and `connect_mcp` gives the same reason.

use crate::config::McpConfig;
use crate::connect::{ConnectTool, Connects};
use crate::options::McpOptions;
use crate::prompts::McpPrompt;
use crate::status::{ServerStatus, Status};
use std::sync::Arc;
use std::time::Duration;
use troupe_tools::DynTool;

/// Why a configured server is not running.
const NOT_STARTED: &str = "not started: this troupe was built without its MCP client";

/// The servers of one troupe process, none of them started.
pub struct McpManager {
    servers: Vec<ServerStatus>,
    problems: Vec<String>,
}

impl McpManager {
    /// Every server of `config`, as failed.
    pub fn new(config: &McpConfig, _options: McpOptions) -> Arc<McpManager> {
        let servers = config
            .entries()
            .map(|entry| ServerStatus {
                name: entry.name.clone(),
                transport: entry.kind(),
                origin: entry.origin.clone(),
                status: Status::Failed,
                tools: Vec::new(),
                last_error: Some(match &entry.config {
                    Ok(_) => NOT_STARTED.to_string(),
                    Err(e) => e.to_string(),
                }),
            })
            .collect();
        Arc::new(McpManager {
            servers,
            problems: config.problems.clone(),
        })
    }

    /// Nothing to start.
    pub fn start(&self, _runtime: &tokio::runtime::Handle) {}

    /// True: no server can be used, so no agent is offered `connect_mcp` or told of servers.
    pub fn is_empty(&self) -> bool {
        true
    }

    /// The servers a call could reach: none.
    pub fn names(&self) -> Vec<&str> {
        Vec::new()
    }

    /// Whether a server of that name can be reached: never.
    pub fn contains(&self, _name: &str) -> bool {
        false
    }

    /// Problems with whole configuration sources (a `.mcp.json` that is not JSON).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Every configured server, failed.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.clone()
    }

    /// No tools.
    pub async fn tools(&self) -> Vec<DynTool> {
        Vec::new()
    }

    /// No prompts.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        Vec::new()
    }

    /// No prompt runs.
    pub async fn run_prompt(&self, _name: &str, _words: &str) -> Option<Result<String, String>> {
        None
    }

    /// Refuses, saying why.
    pub async fn connect(&self, name: &str) -> Result<ServerStatus, String> {
        Err(format!("MCP server `{name}` is {NOT_STARTED}"))
    }

    /// Nothing is starting.
    pub async fn settle(&self, _limit: Duration) {}

    /// The `connect_mcp` tool, which refuses.
    pub fn connect_tool(self: &Arc<Self>) -> DynTool {
        let manager: std::sync::Weak<dyn Connects> = Arc::downgrade(self) as std::sync::Weak<Self>;
        Arc::new(ConnectTool::new(manager, &self.names()))
    }

    /// Nothing to end.
    pub fn shutdown(&self) {}
}

#[async_trait::async_trait]
impl Connects for McpManager {
    async fn connect(&self, name: &str) -> Result<ServerStatus, String> {
        McpManager::connect(self, name).await
    }
}
