//! `troupe plugin list|install|enable|disable`: the plugins of local marketplaces, enabled in
//! the settings file Claude Code would edit.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `troupe plugin`
#[derive(Debug, Args)]
pub struct PluginArgs {
    #[command(subcommand)]
    pub command: PluginCommand,
    /// Workspace directory (default: the one the current directory is in).
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,
}

/// What `troupe plugin` does.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// The plugins of the known local marketplaces (and `--plugin-dir` folders), whether each
    /// is enabled, and how many commands, agents and skills it has.
    List {
        /// Also load these plugin folders, as `--plugin-dir` would.
        #[arg(long, value_name = "DIR")]
        plugin_dir: Vec<PathBuf>,
    },
    /// Enable `name@marketplace` (nothing is copied: the marketplace folder is read in place).
    Install(PluginTarget),
    /// Enable an installed plugin again.
    Enable(PluginTarget),
    /// Disable a plugin (`enabledPlugins["name@marketplace"] = false`).
    Disable(PluginTarget),
}

/// The plugin a change is about and the settings file it goes in.
#[derive(Debug, Args)]
pub struct PluginTarget {
    /// `name@marketplace`.
    pub plugin: String,
    /// Which settings file: user (~/.claude/settings.json), project (.claude/settings.json)
    /// or local (.claude/settings.local.json).
    #[arg(long, value_enum, default_value_t = PluginScope::User)]
    pub scope: PluginScope,
}

/// The settings file a plugin change is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PluginScope {
    User,
    Project,
    Local,
}
