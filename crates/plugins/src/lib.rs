//! Claude Code plugins: a folder with `.claude-plugin/plugin.json` (its name, version,
//! description, and optional paths for its parts) and the parts Claude Code finds in it —
//! `commands/` (namespaced `/plugin:command`), `agents/` (`plugin:agent`), `skills/`,
//! `hooks/hooks.json` and `.mcp.json` (or the manifest's `hooks` and `mcpServers`), with
//! `${CLAUDE_PLUGIN_ROOT}` expanded to the plugin's folder ([`expand`]).
//!
//! Where plugins come from: `--plugin-dir` folders, and the settings' `enabledPlugins`
//! (`{"name@marketplace": true}`) looked up in the local marketplaces the settings
//! (`extraKnownMarketplaces`), the workspace and Claude Code's own list know ([`marketplace`]).
//!
//! Must not know: the CLI, settings files' layout or trust. It reads folders; the binary decides
//! what the parts mean for a run.

pub mod expand;
pub mod manifest;
pub mod marketplace;

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use troupe_catalog::agents::{self, Definitions};
use troupe_catalog::commands::{self, Commands, Scope};
use troupe_catalog::skills::{self, Skills};
use troupe_catalog::SkippedFile;

pub use manifest::Manifest;

/// Who chose a plugin, which decides whether its hooks and servers need workspace trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--plugin-dir`: the person's own choice on the command line.
    CommandLine,
    /// The person's own settings, from a marketplace outside the workspace.
    User,
    /// The workspace: enabled in its settings, or from a marketplace inside it.
    Project,
}

/// One loaded plugin.
#[derive(Debug, Clone)]
pub struct Plugin {
    /// `name@marketplace`, or the name alone for a `--plugin-dir` folder.
    pub id: String,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its folder (what `${CLAUDE_PLUGIN_ROOT}` stands for).
    pub root: PathBuf,
    /// Who chose it.
    pub origin: Origin,
    /// Its commands, named `plugin:command`.
    pub commands: Commands,
    /// Its agents, named `plugin:agent`.
    pub agents: Definitions,
    /// Its skills, named `plugin:skill`.
    pub skills: Skills,
    /// Its hooks in the settings' shape (event → matchers), `${CLAUDE_PLUGIN_ROOT}` expanded and
    /// each command hook given the variable in its environment.
    pub hooks: Map<String, Value>,
    /// Where its hooks were read from (for notices), if it has any.
    pub hooks_origin: Option<PathBuf>,
    /// Its MCP servers by name, `${CLAUDE_PLUGIN_ROOT}` expanded.
    pub mcp_servers: Map<String, Value>,
    /// Files and entries that could not be used.
    pub skipped: Vec<SkippedFile>,
}

impl Plugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }
}

/// Loads the plugin in `root` as `origin` chose it. `fallback` is a marketplace entry that
/// stands in for a missing `plugin.json` (Claude Code's `strict: false`).
pub fn load(root: &Path, origin: Origin, fallback: Option<&Value>) -> Result<Plugin, String> {
    let root = root
        .canonicalize()
        .map_err(|e| format!("plugin folder {}: {e}", root.display()))?;
    let manifest = Manifest::read(&root, fallback)?;
    let name = manifest.name.clone();
    let mut plugin = Plugin {
        id: name.clone(),
        root: root.clone(),
        origin,
        commands: Commands::default(),
        agents: Definitions::default(),
        skills: Skills::default(),
        hooks: Map::new(),
        hooks_origin: None,
        mcp_servers: Map::new(),
        skipped: Vec::new(),
        manifest,
    };
    for path in plugin.manifest.paths("commands", &root) {
        let found = commands::load_path(&path, Scope::Plugin, &name);
        for c in found.commands {
            match plugin.commands.commands.iter().any(|o| o.name == c.name) {
                true => plugin.skipped.push(SkippedFile {
                    why: format!("a command named '/{}' was found earlier", c.name),
                    path: c.path,
                }),
                false => plugin.commands.commands.push(c),
            }
        }
        plugin.skipped.extend(found.skipped);
    }
    for path in plugin.manifest.paths("agents", &root) {
        let found = agents::load_path(&path, &name);
        for def in found.agents {
            match plugin.agents.get(&def.name).is_some() {
                true => plugin.skipped.push(SkippedFile {
                    why: format!("an agent named '{}' was found earlier", def.name),
                    path: def.path,
                }),
                false => plugin.agents.agents.push(def),
            }
        }
        plugin.skipped.extend(found.skipped);
    }
    for path in plugin.manifest.paths("skills", &root) {
        let found = skills::load_path(&path, &name);
        plugin.skills.skills.extend(found.skills);
        plugin.skipped.extend(found.skipped);
    }
    read_hooks(&mut plugin);
    read_servers(&mut plugin);
    Ok(plugin)
}

/// The hooks of `hooks/hooks.json` and of the manifest's `hooks` (an object, or paths to files
/// in `hooks.json`'s shape).
fn read_hooks(plugin: &mut Plugin) {
    let mut documents: Vec<(PathBuf, Value)> = Vec::new();
    let default = plugin.root.join("hooks/hooks.json");
    let mut files = vec![default];
    match plugin.manifest.raw.get("hooks") {
        Some(Value::Object(inline)) => {
            documents.push((plugin.manifest.path.clone(), Value::Object(inline.clone())))
        }
        Some(_) => files.extend(plugin.manifest.listed("hooks", &plugin.root)),
        None => {}
    }
    for file in files {
        if !file.is_file() {
            continue;
        }
        match read_json(&file) {
            Ok(doc) => documents.push((file, doc)),
            Err(why) => plugin.skipped.push(SkippedFile { path: file, why }),
        }
    }
    for (path, doc) in documents {
        // `hooks.json` wraps the events in `hooks`; a manifest's inline object may not.
        let events = match doc.get("hooks") {
            Some(Value::Object(events)) => events.clone(),
            _ => match doc {
                Value::Object(events) => events,
                _ => Map::new(),
            },
        };
        for (event, matchers) in events {
            let Value::Array(matchers) = matchers else {
                if event != "description" {
                    plugin.skipped.push(SkippedFile {
                        path: path.clone(),
                        why: format!("hooks.{event} is not a list"),
                    });
                }
                continue;
            };
            let expanded = matchers
                .into_iter()
                .map(|m| expand::hook_matcher(m, &plugin.root))
                .collect::<Vec<_>>();
            match plugin.hooks.get_mut(&event) {
                Some(Value::Array(list)) => list.extend(expanded),
                _ => {
                    plugin.hooks.insert(event, Value::Array(expanded));
                }
            }
            plugin.hooks_origin.get_or_insert_with(|| path.clone());
        }
    }
}

/// The servers of `.mcp.json` and of the manifest's `mcpServers` (an object, or paths to files
/// in `.mcp.json`'s shape); the manifest's win a name.
fn read_servers(plugin: &mut Plugin) {
    let mut documents: Vec<Value> = Vec::new();
    let mut files = vec![plugin.root.join(".mcp.json")];
    match plugin.manifest.raw.get("mcpServers") {
        Some(Value::Object(inline)) => documents.push(Value::Object(inline.clone())),
        Some(_) => files.extend(plugin.manifest.listed("mcpServers", &plugin.root)),
        None => {}
    }
    let mut read = Vec::new();
    for file in files {
        if !file.is_file() {
            continue;
        }
        match read_json(&file) {
            Ok(doc) => read.push(doc),
            Err(why) => plugin.skipped.push(SkippedFile { path: file, why }),
        }
    }
    read.extend(documents);
    for doc in read {
        let servers = match doc.get("mcpServers") {
            Some(Value::Object(servers)) => servers.clone(),
            _ => match doc {
                Value::Object(servers) => servers,
                _ => Map::new(),
            },
        };
        for (name, entry) in servers {
            plugin
                .mcp_servers
                .insert(name, expand::server(entry, &plugin.root));
        }
    }
}

/// A JSON file, or why it cannot be read.
pub(crate) fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))
}

#[cfg(test)]
mod tests;
