//! The binary's side of settings: reading them (every Claude Code and troupe settings file of
//! the workspace, then `--settings`) through the typed `troupe_settings` crate, and applying
//! what applies to the whole process.

use anyhow::Result;
use std::path::{Path, PathBuf};
use troupe_settings::{Loaded, Scope, Settings};

/// Settings read by this process, by workspace and `--settings`: they are read once per
/// process, whoever asks (the run, `/hooks`, `/status`, `doctor`).
type Cache = Vec<((PathBuf, Option<String>), Loaded)>;
static READ: std::sync::Mutex<Cache> = std::sync::Mutex::new(Vec::new());

/// Reads and merges the settings of `workspace` (once per process: later calls get the same
/// answer); a malformed file is an error naming the file and the line.
pub fn load(workspace: &Path, command_line: Option<&str>) -> Result<Loaded> {
    let key = (workspace.to_path_buf(), command_line.map(str::to_string));
    let mut read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, loaded)) = read.iter().find(|(k, _)| *k == key) {
        return Ok(loaded.clone());
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let loaded = troupe_settings::load(workspace, home.as_deref(), command_line)?;
    read.push((key, loaded.clone()));
    Ok(loaded)
}

/// Forgets what was read, after troupe itself changed a settings file.
pub fn forget_read() {
    READ.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
}

/// Like [`load`], reading only the scopes `sources` names (`--setting-sources
/// user,project,local`; `None` reads them all).
pub fn load_sources(
    workspace: &Path,
    command_line: Option<&str>,
    sources: Option<&str>,
) -> Result<Loaded> {
    let Some(list) = sources else {
        return load(workspace, command_line);
    };
    let mut scopes = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        scopes.push(match name {
            "user" => Scope::User,
            "project" => Scope::Project,
            "local" => Scope::Local,
            other => anyhow::bail!(
                "--setting-sources: unknown source `{other}`; expected user, project or local"
            ),
        });
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Ok(troupe_settings::load_sources(
        workspace,
        home.as_deref(),
        command_line,
        &scopes,
    )?)
}

/// The memory files `--setting-sources` lets in (Claude Code: the sources govern CLAUDE.md
/// too): `user` the user's, `project` the project's, `local` `CLAUDE.local.md`; no flag, all.
pub fn memory_sources(sources: Option<&str>) -> troupe_agent::memory::MemorySources {
    let Some(list) = sources else {
        return troupe_agent::memory::MemorySources::default();
    };
    let has = |name: &str| list.split(',').any(|s| s.trim() == name);
    troupe_agent::memory::MemorySources {
        user: has("user"),
        project: has("project"),
        local: has("local"),
    }
}

/// Puts the settings' `env` in the environment troupe resolves for itself and its children
/// (`troupe_tools::child_env`): the model client reads it through `child_env::var`, every tool
/// process, hook, MCP server and teammate process gets it. The process environment itself is
/// never changed (threads run already).
pub fn apply_env(settings: &Settings) {
    troupe_tools::child_env::set_overlay(settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
}

/// Sets the variables that commands, hooks and MCP servers see although troupe withholds them
/// (its provider keys): `"commandEnv": {"passthrough": ["OPENAI_API_KEY"]}`, read from the
/// user's own settings and `--settings` only, so a repository cannot ask for the keys.
pub fn apply_command_env(loaded: &Loaded) {
    let mut names = Vec::new();
    for layer in &loaded.layers {
        let Some(value) = layer.settings.other.get("commandEnv") else {
            continue;
        };
        if !matches!(layer.scope, Scope::User | Scope::CommandLine) {
            tracing::warn!(origin = %layer.origin, "commandEnv is honoured in user settings and --settings only; ignored here");
            continue;
        }
        let list = value.get("passthrough").and_then(|v| v.as_array());
        let Some(list) = list else {
            tracing::warn!(origin = %layer.origin, "commandEnv.passthrough must be a list of variable names; ignored");
            continue;
        };
        names.extend(list.iter().filter_map(|v| v.as_str().map(str::to_string)));
    }
    troupe_tools::child_env::set_passthrough(names);
}

/// Puts the command-line flags that override settings into them (`--context-window`), so the
/// lead and every teammate built from them see the same.
pub fn apply_flags(settings: &mut Settings, context_window: Option<u64>) {
    if let Some(window) = context_window {
        settings.context_window = Some(window);
    }
}

/// The directories added to the workspace, canonical: `--add-dir` (relative to the current
/// directory) and the settings' `permissions.additionalDirectories` (relative to the workspace
/// root, `~/` under the home directory). One that is not an existing directory is an error.
pub fn added_dirs(
    add_dir: &[PathBuf],
    settings: &Settings,
    workspace: &Path,
) -> Result<Vec<PathBuf>> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let from_flags = add_dir.iter().map(|d| ("--add-dir", d.clone()));
    let from_settings = settings.permissions.additional_directories.iter().map(|d| {
        let path = match (d.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => workspace.join(d),
        };
        ("permissions.additionalDirectories", path)
    });
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (origin, given) in from_flags.chain(from_settings) {
        let real = given
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("{origin} {}: cannot use it: {e}", given.display()))?;
        if !real.is_dir() {
            anyhow::bail!("{origin} {}: not a directory", given.display());
        }
        if !dirs.contains(&real) {
            dirs.push(real);
        }
    }
    Ok(dirs)
}
