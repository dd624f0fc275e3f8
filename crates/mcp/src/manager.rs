//! Every configured server of this process, shared by all its agents: started in the background
//! at launch (nothing waits for them), their tools gathered before each model call, connected
//! on request, and shut down with troupe.

use crate::config::McpConfig;
use crate::connect::{ConnectTool, Connects};
use crate::options::McpOptions;
use crate::prompts::McpPrompt;
use crate::server::Server;
use crate::status::ServerStatus;
use crate::stdio::{end_for_exit, Slots};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use troupe_tools::DynTool;

/// The MCP client of one troupe process.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    problems: Vec<String>,
    changes: watch::Sender<u64>,
    slots: Arc<Slots>,
}

impl McpManager {
    /// A manager for every server of `config`; none is started yet.
    pub fn new(config: &McpConfig, options: McpOptions) -> Arc<McpManager> {
        let options = Arc::new(options);
        let (changes, _) = watch::channel(0);
        let slots = Arc::new(Slots::default());
        let servers = config
            .entries()
            .map(|entry| {
                Server::new(
                    entry.clone(),
                    options.clone(),
                    changes.clone(),
                    slots.clone(),
                )
            })
            .collect();
        Arc::new(McpManager {
            servers,
            problems: config.problems.clone(),
            changes,
            slots,
        })
    }

    /// Starts every valid server that is not started yet, each in a task of its own on
    /// `runtime`, and returns at once.
    pub fn start(&self, runtime: &tokio::runtime::Handle) {
        for server in self.servers.iter().filter(|s| s.is_idle()) {
            let server = server.clone();
            runtime.spawn(async move {
                // Failures are kept in the server's status (and logged); nobody waits here.
                let _ = server.connect(false).await;
            });
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The configured server names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.name()).collect()
    }

    /// Whether a server of that name is configured.
    pub fn contains(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s.name() == name)
    }

    /// Problems with whole configuration sources (a `.mcp.json` that is not JSON).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Every server's status, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// The tools on offer now: every connected server's, with lists the servers said changed
    /// fetched again first. Never waits for a server that is starting.
    pub async fn tools(&self) -> Vec<DynTool> {
        let mut tools = Vec::new();
        for server in &self.servers {
            server.refresh_if_stale().await;
            tools.extend(server.tools().iter().cloned());
        }
        tools
    }

    /// The prompts of every connected server, as slash commands.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.servers
            .iter()
            .flat_map(|s| s.prompts().iter().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// Runs the prompt command `name` (`mcp__<server>__<prompt>`, no slash) with the words
    /// typed after it: the text to send the model. `None` when no connected server has a
    /// prompt of that name.
    pub async fn run_prompt(&self, name: &str, words: &str) -> Option<Result<String, String>> {
        for server in &self.servers {
            let prompts = server.prompts();
            if let Some(prompt) = prompts.iter().find(|p| p.name == name) {
                let arguments = match prompt.arguments_for(words) {
                    Ok(arguments) => arguments,
                    Err(e) => return Some(Err(e)),
                };
                return Some(server.get_prompt(prompt, arguments).await);
            }
        }
        None
    }

    /// Connects `name` now (`connect_mcp`), or says it is connected already.
    pub async fn connect(&self, name: &str) -> Result<ServerStatus, String> {
        let Some(server) = self.servers.iter().find(|s| s.name() == name) else {
            return Err(format!(
                "no MCP server named `{name}` is configured{}",
                match self.servers.is_empty() {
                    true =>
                        " (none is: add one to .mcp.json, settings `mcpServers` or --mcp-config)"
                            .to_string(),
                    false => format!("; configured: {}", self.names().join(", ")),
                }
            ));
        };
        match server.connect(true).await {
            Ok(_) => Ok(server.status()),
            Err(e) => Err(format!("MCP server `{name}` did not connect: {e}")),
        }
    }

    /// Waits until no server is starting, or `limit` has passed.
    pub async fn settle(&self, limit: Duration) {
        let mut changes = self.changes.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        while self.servers.iter().any(|s| s.is_starting()) {
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// The `connect_mcp` tool for this manager's servers.
    pub fn connect_tool(self: &Arc<Self>) -> DynTool {
        let manager: std::sync::Weak<dyn Connects> = Arc::downgrade(self) as std::sync::Weak<Self>;
        Arc::new(ConnectTool::new(manager, &self.names()))
    }

    /// Ends every connection and refuses new ones, for troupe's exit: stdio servers (those
    /// still starting too) are killed with their process groups at once, leaving what they
    /// orphaned to troupe's own final sweep (`troupe_tools::process::end_all`).
    pub fn shutdown(&self) {
        // Marked stopped first: a server still starting then reads its killed process as the
        // run ending, not as a failed start.
        for server in &self.servers {
            server.shutdown();
        }
        end_for_exit(&self.slots);
    }
}

#[async_trait::async_trait]
impl Connects for McpManager {
    async fn connect(&self, name: &str) -> Result<ServerStatus, String> {
        McpManager::connect(self, name).await
    }
}
