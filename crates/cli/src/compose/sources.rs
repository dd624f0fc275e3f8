//! What a run is resolved from besides the workspace's files: [`Sources`], the command line's
//! settings, MCP, store, directory and definition options as given (`--mcp-config` and
//! `--add-dir` paths made absolute, so a launch read elsewhere means the same), and
//! [`ModelChoice`]. A lead resolves its run from its `Sources` and hands the very same value to
//! each teammate process it starts (serialised in the launch, `ProcessLaunch::options`), which
//! resolves its own from it: one type, so a new option cannot reach one and not the other.

use crate::args::{AgentArgs, McpFlags};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The options a run is resolved from, as the command line gave them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sources {
    /// `--settings` (a file or inline JSON).
    pub settings: Option<String>,
    /// `--setting-sources`: which settings (and memory) files count.
    pub setting_sources: Option<String>,
    /// `--mcp-config` values, file paths made absolute.
    pub mcp_config: Vec<String>,
    /// `--strict-mcp-config`.
    pub strict_mcp_config: bool,
    /// `--add-dir` values, made absolute (the settings' `additionalDirectories` are added when
    /// the run is resolved).
    pub add_dirs: Vec<PathBuf>,
    /// `--context-window`.
    pub context_window: Option<u64>,
    /// `--store` (or `TROUPE_STORE`).
    pub store: Option<String>,
    /// `--agents`: agent definitions as JSON.
    pub agents: Option<String>,
    /// `--plugin-dir` folders, made absolute.
    pub plugin_dirs: Vec<PathBuf>,
    /// `--plugin-dir-no-mcp` folders (loaded without their MCP servers), made absolute.
    pub plugin_dirs_no_mcp: Vec<PathBuf>,
    /// `--tools`: the tools every agent may be offered, in troupe's names (`None`: all).
    pub tools: Option<Vec<String>>,
}

impl Sources {
    /// The sources of a command line: `agent`'s options, `--setting-sources` and `--agents`.
    pub fn of_command_line(
        agent: &AgentArgs,
        setting_sources: Option<&str>,
        agents: Option<&str>,
    ) -> Sources {
        Sources {
            settings: agent.settings.clone(),
            setting_sources: setting_sources.map(str::to_string),
            mcp_config: agent.mcp.mcp_config.iter().map(|g| absolute(g)).collect(),
            strict_mcp_config: agent.mcp.strict_mcp_config,
            add_dirs: agent
                .add_dir
                .iter()
                .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()))
                .collect(),
            context_window: agent.context_window,
            store: agent.store.clone(),
            agents: agents.map(str::to_string),
            plugin_dirs: Vec::new(),
            plugin_dirs_no_mcp: Vec::new(),
            tools: None,
        }
    }

    /// These sources with `--tools`' list (see [`super::tool_list::named`]).
    pub fn with_tools(mut self, tools: Option<&str>) -> Sources {
        self.tools = super::tool_list::named(tools);
        self
    }

    /// These sources with the plugin folders of `--plugin-dir` (and its no-MCP form).
    pub fn with_plugin_dirs(mut self, dirs: &[PathBuf], no_mcp: &[PathBuf]) -> Sources {
        let absolute = |d: &PathBuf| std::path::absolute(d).unwrap_or_else(|_| d.clone());
        self.plugin_dirs = dirs.iter().map(absolute).collect();
        self.plugin_dirs_no_mcp = no_mcp.iter().map(absolute).collect();
        self
    }

    /// The MCP flags these sources stand for.
    pub fn mcp_flags(&self) -> McpFlags {
        McpFlags {
            mcp_config: self.mcp_config.clone(),
            strict_mcp_config: self.strict_mcp_config,
        }
    }

    /// As JSON, for `TeamConfig::process_options`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Which model a run calls and with what output limit.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model` (else the settings' `model`, else the provider's default).
    pub model: Option<String>,
    /// `--max-tokens`.
    pub max_tokens: u32,
}

impl ModelChoice {
    /// The choice of a command line.
    pub fn of(agent: &AgentArgs) -> ModelChoice {
        ModelChoice {
            provider: agent.provider.clone(),
            model: agent.model.clone(),
            max_tokens: agent.max_tokens,
        }
    }
}

/// A file option a process started elsewhere resolves the same: inline JSON as it is, a
/// relative file path made absolute.
fn absolute(given: &str) -> String {
    let path = Path::new(given);
    if given.trim_start().starts_with('{') || path.is_absolute() {
        return given.to_string();
    }
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| given.to_string())
}
