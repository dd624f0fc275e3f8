//! The binary's side of MCP: the configured servers gathered from every source in precedence
//! order, the client's options from the settings, rules checked against the servers, and the
//! extension that gives every agent of this process the servers' tools and `connect_mcp`.

use crate::args::McpFlags;
use crate::mcp_files::{McpFiles, McpScope};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use troupe_agent::permissions::Policy;
use troupe_agent::{Extension, ExtensionContext, ToolSource};
use troupe_mcp::{McpConfig, McpManager, McpOptions, ServerStatus};
use troupe_settings::{Loaded, Permissions, Scope, Settings};
use troupe_tools::DynTool;

/// Every configured server, lowest precedence first: `~/.claude.json`'s user-scope servers,
/// the user's settings, the workspace's `.mcp.json`, `~/.claude.json`'s servers of this
/// workspace (`claude mcp add`'s local scope), the project's and local settings, `--settings`, then `--mcp-config` (only that
/// with `--strict-mcp-config`). A `.mcp.json` that cannot be read is reported, not fatal; a bad
/// `--mcp-config` is an error. `.mcp.json` is read only when `workspace_servers` (the
/// workspace is trusted).
pub fn config(
    workspace: &Path,
    loaded: &Loaded,
    flags: &McpFlags,
    workspace_servers: bool,
) -> Result<McpConfig> {
    let env = |name: &str| troupe_tools::child_env::var(name);
    let mut config = McpConfig::new();
    if !flags.strict_mcp_config {
        let (user, rest): (Vec<_>, Vec<_>) =
            loaded.layers.iter().partition(|l| l.scope == Scope::User);
        let files = McpFiles::new(workspace);
        let claude_json = |config: &mut McpConfig, scope: McpScope| match files.servers(scope) {
            Ok(servers) => {
                let origin = match files.path(scope) {
                    Ok(path) => format!("{} ({} scope)", path.display(), scope.as_str()),
                    Err(_) => scope.as_str().to_string(),
                };
                config.add_servers(&origin, &servers, &env);
            }
            Err(problem) => {
                tracing::warn!("{problem:#}");
                config.problems.push(format!("{problem:#}"));
            }
        };
        claude_json(&mut config, McpScope::User);
        for layer in user {
            config.add_servers(&layer.origin, &layer.settings.mcp_servers, &env);
        }
        if workspace_servers {
            let mut project = McpConfig::new();
            if let Err(problem) = project.add_file(&workspace.join(".mcp.json"), &env) {
                tracing::warn!("{problem}");
                project.problems.push(problem.to_string());
            }
            let choice = crate::mcp_json_choice::McpJsonChoice::of(&loaded.settings);
            let left_out = config.extend_where(project, |name| choice.starts(name));
            if !left_out.is_empty() {
                tracing::info!(servers = ?left_out, "left out by enabledMcpjsonServers/disabledMcpjsonServers");
            }
        }
        // `claude mcp add`'s local scope wins over the project's, as in Claude Code.
        claude_json(&mut config, McpScope::Local);
        for layer in rest {
            config.add_servers(&layer.origin, &layer.settings.mcp_servers, &env);
        }
    }
    for given in &flags.mcp_config {
        let trimmed = given.trim_start();
        if trimmed.starts_with('{') {
            config.add_document("--mcp-config", trimmed, &env)?;
        } else {
            let found = config.add_file(Path::new(given), &env)?;
            if !found {
                bail!("--mcp-config {given}: no such file");
            }
        }
    }
    Ok(config)
}

/// The channel to the in-process servers of the process driving this one (the Agent SDK over
/// `--input-format stream-json`), set before the lead is built.
static SDK_SERVERS: std::sync::OnceLock<troupe_mcp::SdkBridge> = std::sync::OnceLock::new();

/// Makes `"type": "sdk"` servers reachable through `bridge` (once per process).
pub fn use_sdk_servers(bridge: troupe_mcp::SdkBridge) {
    let _ = SDK_SERVERS.set(bridge);
}

/// The client's options: the settings' timeouts, else Claude Code's variables (`MCP_TOOL_TIMEOUT`
/// and `MCP_TIMEOUT`, in milliseconds), else the defaults.
pub fn options(workspace: &Path, settings: &Settings) -> McpOptions {
    let from_env = |name: &str| {
        troupe_tools::child_env::var(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    };
    let mut options = McpOptions::new(workspace.to_path_buf());
    options.sdk = SDK_SERVERS.get().cloned();
    if let Some(timeout) = settings
        .mcp_tool_timeout
        .map(Duration::from_secs_f64)
        .or_else(|| from_env("MCP_TOOL_TIMEOUT"))
    {
        options.tool_timeout = timeout;
    }
    if let Some(timeout) = settings
        .mcp_startup_timeout
        .map(Duration::from_secs_f64)
        .or_else(|| from_env("MCP_TIMEOUT"))
    {
        options.startup_timeout = timeout;
    }
    options
}

/// A permission rule about an MCP server nobody configured would silently allow or deny
/// nothing: one given on the command line is refused; one from the settings (`settings`, a
/// Claude Code project's rules for servers configured elsewhere) is a warning, returned.
pub fn check_rules(
    policy: &Policy,
    config: &McpConfig,
    settings: &Permissions,
) -> Result<Vec<String>> {
    let rules = &policy.rules;
    let lists = [
        ("allow", &rules.allow, &settings.allow),
        ("ask", &rules.ask, &settings.ask),
        ("deny", &rules.deny, &settings.deny),
    ];
    let mut warnings = Vec::new();
    for (list, rules, from_settings) in lists {
        for rule in rules.iter() {
            let Some(server) = rule.mcp_server() else {
                continue;
            };
            if config.contains(server) {
                continue;
            }
            let configured = match config.is_empty() {
                true => "no MCP server is configured".to_string(),
                false => format!("configured: {}", config.names().join(", ")),
            };
            let problem = format!(
                "the {list} rule `{rule}` names the MCP server `{server}`, which is not configured ({configured})"
            );
            if from_settings.iter().any(|r| r.trim() == rule.as_str()) {
                warnings.push(format!(
                    "settings permissions.{list}: {problem}; it matches nothing"
                ));
            } else {
                bail!(
                    "{problem}; configure it in .mcp.json, settings `mcpServers` or --mcp-config, or remove the rule"
                );
            }
        }
    }
    Ok(warnings)
}

/// Gathers the servers and checks the rules: the manager every agent of this process shares
/// (not started yet), and the warnings about settings rules naming servers nobody configured.
pub fn manager(
    workspace: &Path,
    loaded: &Loaded,
    flags: &McpFlags,
    policy: &Policy,
    workspace_servers: bool,
) -> Result<(Arc<McpManager>, Vec<String>)> {
    let config =
        config(workspace, loaded, flags, workspace_servers).context("MCP configuration")?;
    let mut warnings = check_rules(policy, &config, &loaded.settings.permissions)?;
    warnings.extend(not_started(&config));
    let manager = McpManager::new(&config, options(workspace, &loaded.settings));
    Ok((manager, warnings))
}

/// Nothing: this build starts the servers.
#[cfg(feature = "mcp")]
fn not_started(_config: &McpConfig) -> Option<String> {
    None
}

/// In a build without the client, that the configured servers are not started and what to do
/// (said once, at start; `troupe_mcp`'s manager then shows each as failed).
#[cfg(not(feature = "mcp"))]
fn not_started(config: &McpConfig) -> Option<String> {
    (!config.is_empty()).then(|| {
        format!(
            "MCP servers are configured ({}) but not started: {}",
            config.names().join(", "),
            crate::features::missing("MCP support", "mcp")
        )
    })
}

/// What every agent of the process gets from MCP: the servers' tools as they connect,
/// `connect_mcp`, and a prompt section naming the servers.
pub struct McpExtension {
    manager: Arc<McpManager>,
}

impl McpExtension {
    /// The extension over `manager`'s servers.
    pub fn new(manager: Arc<McpManager>) -> McpExtension {
        McpExtension { manager }
    }
}

/// The servers' tools as they are now, for the loop to ask before each model call.
struct Source(Arc<McpManager>);

#[async_trait::async_trait]
impl ToolSource for Source {
    async fn tools(&self) -> Vec<DynTool> {
        self.0.tools().await
    }
}

impl Extension for McpExtension {
    fn name(&self) -> &str {
        "mcp"
    }

    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        match self.manager.is_empty() {
            true => Vec::new(),
            false => vec![self.manager.connect_tool()],
        }
    }

    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        if self.manager.is_empty() {
            return Vec::new();
        }
        let servers: Vec<String> = self
            .manager
            .statuses()
            .iter()
            .map(|s| format!("{} ({})", s.name, s.transport))
            .collect();
        vec![format!(
            "# MCP servers\nConfigured: {}. They start in the background; a server's tools join your tools as mcp__<server>__<tool> once it is connected. \
             Call connect_mcp with {{\"name\": …}} to connect one that is not connected yet or has failed.",
            servers.join(", ")
        )]
    }

    fn tool_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn ToolSource>> {
        match self.manager.is_empty() {
            true => None,
            false => Some(Arc::new(Source(self.manager.clone()))),
        }
    }
}

/// Warns on stderr about every configured server that cannot be used (an entry that does not
/// parse) and every source that could not be read, worded as `troupe mcp list` shows them.
pub fn warn_unusable(manager: &McpManager) {
    for status in manager.statuses() {
        if status.transport == "unknown" {
            let why = status.last_error.clone().unwrap_or_else(|| {
                format!("MCP server `{}`: its entry does not parse", status.name)
            });
            crate::render::sanitize::errln!("troupe: warning: {why} (left out)");
        }
    }
    for problem in manager.problems() {
        crate::render::sanitize::errln!("troupe: warning: MCP configuration problem: {problem}");
    }
}

/// Before the first model call of a script (`-p`, the Agent SDK), as Claude Code does: waits
/// until every configured server has connected or failed, at most `MCP_TIMEOUT` milliseconds
/// (else the startup timeout of the settings, else the default), and says on stderr which
/// servers are still starting — the first call goes without their tools, later calls get
/// them once they connect.
pub fn wait_for_first_call(
    manager: &McpManager,
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
) {
    if manager.is_empty() {
        return;
    }
    let limit = troupe_tools::child_env::var("MCP_TIMEOUT")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .or_else(|| settings.mcp_startup_timeout.map(Duration::from_secs_f64))
        .unwrap_or(troupe_mcp::DEFAULT_STARTUP_TIMEOUT);
    runtime.block_on(manager.settle(limit));
    for status in manager.statuses() {
        if status.status == troupe_mcp::Status::Pending {
            crate::render::sanitize::errln!(
                "troupe: warning: MCP server `{}` did not connect within {} ms (MCP_TIMEOUT); the first model call goes without its tools",
                status.name,
                limit.as_millis()
            );
        }
    }
}

/// The servers as stream-json's `system/init` lists them (Claude Code's shape).
pub fn init_servers(manager: &McpManager) -> Value {
    Value::Array(
        manager
            .statuses()
            .iter()
            .map(|s| json!({"name": s.name, "status": s.status.as_str()}))
            .collect(),
    )
}

/// One server as `troupe mcp list --json` shows it.
pub fn status_json(status: &ServerStatus) -> Value {
    json!({
        "name": status.name,
        "status": status.status.as_str(),
        "transport": status.transport,
        "tools": status.tools.len(),
        "tool_names": status.tools,
        "last_error": status.last_error,
        "origin": status.origin,
    })
}

/// The servers as a table for people (`troupe mcp list`, `/mcp`).
pub fn status_table(statuses: &[ServerStatus], problems: &[String]) -> String {
    if statuses.is_empty() {
        let mut out = "No MCP servers are configured: add them to .mcp.json, settings `mcpServers` or --mcp-config.\n".to_string();
        for problem in problems {
            out.push_str(&format!("problem: {problem}\n"));
        }
        return out;
    }
    let width = statuses
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<width$}  {:<9}  {:<9}  {:>5}  LAST ERROR\n",
        "NAME", "STATUS", "TRANSPORT", "TOOLS"
    );
    for s in statuses {
        out.push_str(&format!(
            "{:<width$}  {:<9}  {:<9}  {:>5}  {}\n",
            s.name,
            s.status.as_str(),
            s.transport,
            s.tools.len(),
            s.last_error.as_deref().unwrap_or("")
        ));
    }
    for problem in problems {
        out.push_str(&format!("problem: {problem}\n"));
    }
    out
}

#[cfg(all(test, not(feature = "mcp")))]
mod tests {
    #[test]
    fn configured_servers_are_said_to_be_not_started() {
        let mut config = troupe_mcp::McpConfig::new();
        let servers = r#"{"mcpServers": {"time": {"command": "mcp-server-time"}}}"#;
        config
            .add_document("--mcp-config", servers, &|_| None)
            .unwrap();
        let warning = super::not_started(&config).unwrap_or_default();
        assert!(
            warning.contains("configured (time) but not started"),
            "{warning}"
        );
        assert!(warning.contains("Cargo feature `mcp`"), "{warning}");
        assert!(super::not_started(&troupe_mcp::McpConfig::new()).is_none());
    }
}
