//! The run's plugins (`troupe_plugins`): the `--plugin-dir` folders and the settings'
//! `enabledPlugins`, loaded once when the run is resolved. Their hooks and MCP servers join the
//! settings as layers of their own, before workspace trust is decided: a plugin the workspace
//! chose (its settings enabled it, or it comes from a marketplace inside the workspace) is a
//! project layer, so its hooks and servers are listed, hashed and dropped like the project's
//! own; one from `--plugin-dir` or the person's settings is theirs and needs no trust. Their
//! commands, agents and skills join the project's (`compose.rs`, `setup.rs`).

use crate::subagents::Report;
use std::path::{Path, PathBuf};
use troupe_plugins::marketplace::{self, SettingsView};
use troupe_plugins::{Origin, Plugin};
use troupe_settings::{Layer, Loaded, Scope, Settings};

/// Loads the plugins of `dirs` (`--plugin-dir`; `no_mcp`: those without their servers) and of
/// the settings' `enabledPlugins`; a folder or entry that cannot be loaded is a warning line
/// (when `report` says so), never an error. A `--plugin-dir` plugin wins a name.
pub fn load(
    workspace: &Path,
    home: Option<&Path>,
    dirs: &[PathBuf],
    no_mcp: &[PathBuf],
    loaded: &Loaded,
    report: Report,
) -> Vec<Plugin> {
    let mut warnings = Vec::new();
    let mut plugins: Vec<Plugin> = Vec::new();
    let given = dirs
        .iter()
        .map(|d| (d, false))
        .chain(no_mcp.iter().map(|d| (d, true)));
    for (dir, without_servers) in given {
        match troupe_plugins::load(dir, Origin::CommandLine, None) {
            Ok(mut plugin) => {
                if without_servers {
                    plugin.mcp_servers.clear();
                }
                plugins.push(plugin);
            }
            Err(why) => warnings.push(format!("--plugin-dir {}: {why}", dir.display())),
        }
    }
    let views = views(loaded);
    let (enabled, more) = marketplace::load_enabled(workspace, home, &views);
    warnings.extend(more);
    for plugin in enabled {
        match plugins.iter().any(|p| p.name() == plugin.name()) {
            true => warnings.push(format!(
                "plugin {}: a plugin named {} was loaded earlier (--plugin-dir wins)",
                plugin.id,
                plugin.name()
            )),
            false => plugins.push(plugin),
        }
    }
    if report == Report::Warn {
        for line in &warnings {
            eprintln!("troupe: warning: {line}");
        }
        for plugin in &plugins {
            for skipped in &plugin.skipped {
                eprintln!(
                    "troupe: warning: plugin {}: skipped {}: {}",
                    plugin.id,
                    skipped.path.display(),
                    skipped.why
                );
            }
        }
    }
    plugins
}

/// The settings layers as the plugins crate reads them.
pub fn views(loaded: &Loaded) -> Vec<SettingsView<'_>> {
    loaded
        .layers
        .iter()
        .map(|l| SettingsView {
            keys: &l.settings.other,
            project: matches!(l.scope, Scope::Project | Scope::Local),
        })
        .collect()
}

/// Puts each plugin's hooks and MCP servers into `loaded` as a layer of its own, below every
/// settings file (a settings file wins a server's name), and merges the layers again.
pub fn add_layers(plugins: &[Plugin], loaded: &mut Loaded) {
    let mut added = Vec::new();
    for plugin in plugins {
        if plugin.hooks.is_empty() && plugin.mcp_servers.is_empty() {
            continue;
        }
        let document = serde_json::json!({
            "hooks": plugin.hooks,
            "mcpServers": plugin.mcp_servers,
        });
        let settings: Settings = match serde_json::from_value(document) {
            Ok(settings) => settings,
            Err(e) => {
                eprintln!(
                    "troupe: warning: plugin {}: its hooks are not in Claude Code's shape ({e}); they are not used",
                    plugin.id
                );
                continue;
            }
        };
        let scope = match plugin.origin {
            Origin::CommandLine => Scope::CommandLine,
            Origin::User => Scope::User,
            Origin::Project => Scope::Project,
        };
        let origin = plugin
            .hooks_origin
            .clone()
            .unwrap_or_else(|| plugin.root.clone());
        added.push(Layer {
            scope,
            origin: format!("{} (plugin {})", origin.display(), plugin.id),
            settings,
        });
    }
    if added.is_empty() {
        return;
    }
    added.append(&mut loaded.layers);
    loaded.layers = added;
    let mut merged = Settings::default();
    for layer in &loaded.layers {
        merged.merge(&layer.settings);
    }
    loaded.settings = merged;
}
