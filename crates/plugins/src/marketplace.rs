//! Marketplaces and `enabledPlugins`. A marketplace is a folder whose
//! `.claude-plugin/marketplace.json` lists plugins (`plugins[].source`, a path relative to the
//! folder). troupe knows the local (`directory`) ones the settings' `extraKnownMarketplaces`
//! name, the workspace's own marketplace file, and those Claude Code installed
//! (`~/.claude/plugins/known_marketplaces.json`); a `github`, `git` or `url` source cannot be
//! fetched offline and is a warning. `enabledPlugins` (`{"name@marketplace": true}`) picks
//! plugins from them, a later settings layer overriding an earlier one.

use crate::{Origin, Plugin};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Where a marketplace lists its plugins, under its folder.
pub const MARKETPLACE_FILE: &str = ".claude-plugin/marketplace.json";

/// One settings document as this crate reads it: its keys beyond troupe's own, and whether it is
/// the workspace's (project or local settings) rather than the person's.
#[derive(Debug, Clone, Copy)]
pub struct SettingsView<'a> {
    /// The document's keys (`enabledPlugins`, `extraKnownMarketplaces`).
    pub keys: &'a Map<String, Value>,
    /// True for the workspace's own settings files.
    pub project: bool,
}

/// A local marketplace.
#[derive(Debug, Clone)]
pub struct Marketplace {
    /// The name plugins are enabled under (`name@<this>`).
    pub name: String,
    /// Its folder.
    pub root: PathBuf,
    /// Whether the workspace made it known (or it lies inside the workspace).
    pub project: bool,
    /// Its `plugins` entries (unread when the file is missing or broken; see `problem`).
    pub entries: Vec<Value>,
    /// Why its file could not be read, if it could not.
    pub problem: Option<String>,
    /// `metadata.pluginRoot`, as written.
    raw_plugin_root: Option<String>,
}

impl Marketplace {
    /// The entry of the plugin called `name`.
    pub fn entry(&self, name: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
    }

    /// The folder of the entry `entry`, or why it has none here.
    pub fn plugin_root(&self, entry: &Value) -> Result<PathBuf, String> {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
        match entry.get("source") {
            Some(Value::String(source)) => {
                let base = match self.plugin_base() {
                    Some(base) if !source.starts_with('.') => base,
                    _ => self.root.clone(),
                };
                Ok(base.join(source.trim_start_matches("./")))
            }
            Some(Value::Object(source)) => Err(format!(
                "plugin {name}@{}: its source is {} ({}), which troupe cannot fetch; only local paths load",
                self.name,
                source.get("source").and_then(Value::as_str).unwrap_or("not a path"),
                source
                    .get("repo")
                    .or_else(|| source.get("url"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )),
            _ => Err(format!("plugin {name}@{}: its entry has no source", self.name)),
        }
    }

    /// `metadata.pluginRoot`, the folder bare plugin sources are under.
    fn plugin_base(&self) -> Option<PathBuf> {
        let given = self.raw_plugin_root.as_deref()?;
        Some(self.root.join(given.trim_start_matches("./")))
    }
}

/// The marketplaces known to a run, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// The local marketplaces, first of a name wins.
    pub marketplaces: Vec<Marketplace>,
    /// One line each: sources troupe cannot read.
    pub warnings: Vec<String>,
}

impl Known {
    /// The marketplace called `name`.
    pub fn get(&self, name: &str) -> Option<&Marketplace> {
        self.marketplaces.iter().find(|m| m.name == name)
    }

    fn add(&mut self, name: String, root: PathBuf, project: bool) {
        if self.get(&name).is_some() {
            return;
        }
        let (entries, raw_plugin_root, problem) =
            match crate::read_json(&root.join(MARKETPLACE_FILE)) {
                Ok(doc) => (
                    doc.get("plugins")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                    doc.pointer("/metadata/pluginRoot")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    None,
                ),
                Err(why) => (Vec::new(), None, Some(format!("{MARKETPLACE_FILE}: {why}"))),
            };
        self.marketplaces.push(Marketplace {
            name,
            root,
            project,
            entries,
            raw_plugin_root,
            problem,
        });
    }
}

/// The marketplaces `workspace`'s settings `layers` (lowest precedence first) know: the
/// settings' `extraKnownMarketplaces` (local `directory` sources), the workspace's own
/// marketplace file, and Claude Code's installed list under `home`.
pub fn known(workspace: &Path, home: Option<&Path>, layers: &[SettingsView<'_>]) -> Known {
    let mut known = Known::default();
    // The workspace's own marketplace file: a settings entry of the same name (Claude Code's
    // github source for this very repository) is satisfied by it, without a warning.
    let own = crate::read_json(&workspace.join(MARKETPLACE_FILE))
        .ok()
        .and_then(|doc| doc.get("name").and_then(Value::as_str).map(str::to_string));
    let mut warned: Vec<String> = Vec::new();
    // The later layer wins a name: walk them from the highest.
    for layer in layers.iter().rev() {
        let Some(Value::Object(extra)) = layer.keys.get("extraKnownMarketplaces") else {
            continue;
        };
        for (name, entry) in extra {
            let source = entry.get("source").unwrap_or(entry);
            let kind = source.get("source").and_then(Value::as_str).unwrap_or("");
            match (kind, source.get("path").and_then(Value::as_str)) {
                ("directory" | "file", Some(path)) => {
                    let root = local_path(path, workspace, home);
                    let root = match kind {
                        // A `file` source names the marketplace file itself.
                        "file" => root
                            .parent()
                            .and_then(Path::parent)
                            .map_or(root.clone(), Path::to_path_buf),
                        _ => root,
                    };
                    let project = layer.project || root.starts_with(workspace);
                    known.add(name.clone(), root, project);
                }
                // Said once, however many settings files name it.
                _ if own.as_deref() == Some(name.as_str()) || warned.contains(name) => {}
                _ => {
                    warned.push(name.clone());
                    known.warnings.push(format!(
                        "extraKnownMarketplaces.{name}: a {} source cannot be fetched by troupe; only local `directory` marketplaces load",
                        if kind.is_empty() { "non-local" } else { kind }
                    ));
                }
            }
        }
    }
    if let Some(name) = own {
        known.add(name, workspace.to_path_buf(), true);
    }
    if let Some(home) = home {
        let installed = home.join(".claude/plugins/known_marketplaces.json");
        if let Ok(Value::Object(list)) = crate::read_json(&installed) {
            for (name, entry) in list {
                if let Some(dir) = entry.get("installLocation").and_then(Value::as_str) {
                    let root = PathBuf::from(dir);
                    if root.join(MARKETPLACE_FILE).is_file() {
                        let project = root.starts_with(workspace);
                        known.add(name, root, project);
                    }
                }
            }
        }
    }
    known
}

/// `enabledPlugins` over the layers: each `name@marketplace` and whether the last layer that
/// names it enables it, with whether that layer is the workspace's.
pub fn enabled(layers: &[SettingsView<'_>]) -> Vec<(String, bool, bool)> {
    let mut out: Vec<(String, bool, bool)> = Vec::new();
    for layer in layers {
        let Some(Value::Object(map)) = layer.keys.get("enabledPlugins") else {
            continue;
        };
        for (id, on) in map {
            // Claude Code also accepts a list of version constraints for "on".
            let on = match on {
                Value::Bool(b) => *b,
                Value::Array(_) | Value::String(_) => true,
                _ => false,
            };
            match out.iter_mut().find(|(i, ..)| i == id) {
                Some(found) => {
                    found.1 = on;
                    found.2 = layer.project;
                }
                None => out.push((id.clone(), on, layer.project)),
            }
        }
    }
    out
}

/// Loads every enabled plugin of `layers` from the marketplaces they know; each one that cannot
/// be loaded is a warning line (with the marketplace warnings).
pub fn load_enabled(
    workspace: &Path,
    home: Option<&Path>,
    layers: &[SettingsView<'_>],
) -> (Vec<Plugin>, Vec<String>) {
    let known = known(workspace, home, layers);
    let mut warnings = known.warnings.clone();
    let mut plugins = Vec::new();
    for (id, on, from_project) in enabled(layers) {
        if !on {
            continue;
        }
        match find(&known, &id) {
            Ok((market, entry, root)) => {
                let origin = match from_project || market.project {
                    true => Origin::Project,
                    false => Origin::User,
                };
                match crate::load(&root, origin, Some(entry)) {
                    Ok(mut plugin) => {
                        plugin.id = id;
                        plugins.push(plugin);
                    }
                    Err(why) => warnings.push(format!("enabledPlugins {id}: {why}")),
                }
            }
            Err(why) => warnings.push(why),
        }
    }
    (plugins, warnings)
}

/// The marketplace, entry and folder of `name@marketplace`, or a line saying why there is none.
pub fn find<'k>(
    known: &'k Known,
    id: &str,
) -> Result<(&'k Marketplace, &'k Value, PathBuf), String> {
    let Some((name, market)) = id.rsplit_once('@') else {
        return Err(format!(
            "enabledPlugins {id}: name it as plugin@marketplace"
        ));
    };
    let Some(marketplace) = known.get(market) else {
        return Err(format!(
            "enabledPlugins {id}: no local marketplace named {market} is known (add it to extraKnownMarketplaces as a directory source)"
        ));
    };
    if let Some(problem) = &marketplace.problem {
        return Err(format!(
            "enabledPlugins {id}: marketplace {market}: {problem}"
        ));
    }
    let entry = marketplace.entry(name).ok_or_else(|| {
        format!("enabledPlugins {id}: marketplace {market} lists no plugin named {name}")
    })?;
    let root = marketplace.plugin_root(entry)?;
    Ok((marketplace, entry, root))
}

/// A settings path: `~/` under `home`, relative ones under the workspace.
fn local_path(path: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    let path = Path::new(path);
    match path.is_absolute() {
        true => path.to_path_buf(),
        false => workspace.join(path.strip_prefix("./").unwrap_or(path)),
    }
}
