//! The binary's side of a teammate process's launch (`troupe_team::launch`): the options a lead
//! adds for its teammate processes, and `troupe teammate --config-file` reading a launch back
//! into the teammate's arguments. Whatever a lead resolved goes to its teammates as data, so a
//! process teammate is configured as the lead was, flag for flag, by construction.

use crate::args::{AgentArgs, TeammateArgs};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use troupe_team::launch::ProcessLaunch;

/// What a lead adds to a teammate process's launch besides the team's configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessOptions {
    /// The lead's `--settings` (a file or inline JSON).
    pub settings: Option<String>,
    /// The lead's `--setting-sources`.
    pub setting_sources: Option<String>,
    /// The lead's `--mcp-config` values, file paths made absolute.
    pub mcp_config: Vec<String>,
    /// The lead's `--strict-mcp-config`.
    pub strict_mcp_config: bool,
    /// The directories the lead's tools may use besides the workspace, as it resolved them.
    pub add_dirs: Vec<PathBuf>,
    /// The lead's `--context-window`.
    pub context_window: Option<u64>,
    /// The team's store, as the lead chose it.
    pub store: Option<String>,
}

impl ProcessOptions {
    /// The options of a lead started with `agent` and `setting_sources`, whose tools reach
    /// `added_dirs` and whose team is on `store`.
    pub fn of_lead(
        agent: &AgentArgs,
        setting_sources: Option<&str>,
        added_dirs: &[PathBuf],
        store: &str,
    ) -> ProcessOptions {
        ProcessOptions {
            settings: agent.settings.clone(),
            setting_sources: setting_sources.map(str::to_string),
            mcp_config: agent.mcp.mcp_config.iter().map(|g| absolute(g)).collect(),
            strict_mcp_config: agent.mcp.strict_mcp_config,
            add_dirs: added_dirs.to_vec(),
            context_window: agent.context_window,
            store: Some(store.to_string()),
        }
    }

    /// As JSON, for `TeamConfig::process_options`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// An `--mcp-config` value a process started elsewhere resolves the same: inline JSON as it is,
/// a relative file path made absolute.
fn absolute(given: &str) -> String {
    let path = Path::new(given);
    if given.trim_start().starts_with('{') || path.is_absolute() {
        return given.to_string();
    }
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| given.to_string())
}

/// The teammate's arguments: `args` as given, or, with `--config-file`, the launch it names
/// (`-`: standard input) in their place.
pub fn resolve(args: &TeammateArgs) -> Result<TeammateArgs> {
    let Some(path) = &args.config_file else {
        return Ok(args.clone());
    };
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the teammate's configuration from standard input")?;
        text
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the teammate's configuration {}", path.display()))?
    };
    let launch = ProcessLaunch::from_json(&text)
        .map_err(|e| anyhow::anyhow!("--config-file {}: {e}", path.display()))?;
    apply(args, launch)
}

/// `args` with everything the launch says in place of what they said.
fn apply(args: &TeammateArgs, launch: ProcessLaunch) -> Result<TeammateArgs> {
    let options: ProcessOptions = match launch.options {
        serde_json::Value::Null => ProcessOptions::default(),
        value => serde_json::from_value(value)
            .context("the teammate launch's options are not this troupe's")?,
    };
    let mut out = args.clone();
    out.config_file = None;
    out.team = Some(launch.team);
    out.name = Some(launch.name);
    out.role = Some(launch.role);
    out.prompt = launch.prompt;
    out.allow_rules = launch.allow_rules;
    out.ask_rules = launch.ask_rules;
    out.deny_rules = launch.deny_rules;
    out.lease = launch.lease;
    out.reasoning = Some(launch.reasoning);
    out.setting_sources = options.setting_sources;
    let agent = &mut out.agent;
    agent.cwd = Some(launch.workspace);
    agent.model = Some(launch.model);
    agent.provider = Some(launch.provider);
    agent.max_tokens = launch.max_tokens;
    agent.permission_mode = Some(launch.permission_mode);
    agent.settings = options.settings;
    agent.context_window = options.context_window;
    agent.add_dir = options.add_dirs;
    agent.mcp.mcp_config = options.mcp_config;
    agent.mcp.strict_mcp_config = options.strict_mcp_config;
    if options.store.is_some() {
        agent.store = options.store;
    }
    Ok(out)
}
