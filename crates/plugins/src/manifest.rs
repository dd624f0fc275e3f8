//! `.claude-plugin/plugin.json`: the plugin's name, version and description, and the paths its
//! parts are at besides the default folders (`commands`, `agents`, `skills`: a path or a list
//! of paths, relative to the plugin's folder, `./`-prefixed as Claude Code writes them).

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where a plugin's manifest is, under its folder.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";

/// A plugin's manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Its name (the namespace of its commands, agents and skills).
    pub name: String,
    /// Its version, if it gives one.
    pub version: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// The file (or the marketplace entry standing in for it).
    pub path: PathBuf,
    /// The whole document, for the optional paths.
    pub raw: Value,
}

impl Manifest {
    /// Reads `root`'s manifest, or takes `fallback` (a marketplace entry) when there is none.
    pub fn read(root: &Path, fallback: Option<&Value>) -> Result<Manifest, String> {
        let path = root.join(MANIFEST);
        let raw = match (path.is_file(), fallback) {
            (true, _) => crate::read_json(&path).map_err(|e| format!("{}: {e}", path.display()))?,
            (false, Some(entry)) => entry.clone(),
            (false, None) => {
                return Err(format!(
                    "{} has no {MANIFEST}: it is not a plugin folder",
                    root.display()
                ))
            }
        };
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
        let name = text("name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("{}: the manifest has no `name`", path.display()))?;
        if name
            .chars()
            .any(|c| c.is_whitespace() || c == ':' || c == '/')
        {
            return Err(format!(
                "{}: plugin name {name:?} must be one word without `:` or `/`",
                path.display()
            ));
        }
        Ok(Manifest {
            name,
            version: text("version"),
            description: text("description"),
            path,
            raw,
        })
    }

    /// The paths `key` lists in the manifest (a string or a list of strings), relative to
    /// `root`; none when it lists none.
    pub fn listed(&self, key: &str, root: &Path) -> Vec<PathBuf> {
        let given: Vec<&str> = match self.raw.get(key) {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        given
            .into_iter()
            .map(|p| root.join(p.trim_start_matches("./")))
            .collect()
    }

    /// Where `part` (`commands`, `agents`, `skills`) is looked for: its default folder, then
    /// the paths the manifest adds.
    pub fn paths(&self, part: &str, root: &Path) -> Vec<PathBuf> {
        let mut paths = vec![root.join(part)];
        for path in self.listed(part, root) {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }
}
