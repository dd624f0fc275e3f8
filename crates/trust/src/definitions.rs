//! What a workspace defines that needs trust — everything its project and local settings layers
//! set beyond the allow-list ([`super::allow`]) and the servers of `.mcp.json` — listed for the
//! person, and hashed (with the contents of the workspace files the commands name) so a change
//! asks again.

use super::rules::ControlPlane;
use sha2::{Digest, Sha256};
use std::path::Path;
use troupe_settings::{Loaded, Scope, Settings};

/// The largest workspace file a hook or server command names whose contents are hashed.
const MAX_HASHED_FILE: u64 = 4 << 20;

/// Everything the workspace would run or loosen, and their hash.
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    items: Vec<Item>,
    /// Hex SHA-256 of every item and the files their commands name (not of the workspace's
    /// path: a teammate's worktree with the same definitions hashes the same).
    pub hash: String,
}

/// One definition as shown.
#[derive(Debug, Clone)]
struct Item {
    kind: Kind,
    text: String,
    origin: String,
}

/// What sort of definition an item is (the notice names the sorts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Hook,
    Server,
    StatusLine,
    Env,
    Loosening,
    /// Any other setting off the allow-list (`store`, `teammate_permissions: lead`, unknown keys).
    Setting,
}

impl Definitions {
    /// True when the workspace defines nothing troupe would run or loosen.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// One line per definition, indented, naming the file it comes from.
    pub fn listing(&self) -> String {
        self.items
            .iter()
            .map(|i| format!("  - {}   ({})", i.text, i.origin))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What kinds of definitions there are, for a notice: "hooks, MCP servers and settings".
    pub fn kinds(&self) -> String {
        let mut kinds: Vec<Kind> = self.items.iter().map(|i| i.kind).collect();
        kinds.sort();
        kinds.dedup();
        let names: Vec<&str> = kinds
            .iter()
            .map(|k| match k {
                Kind::Hook => "hooks",
                Kind::Server => "MCP servers",
                Kind::StatusLine => "statusLine",
                Kind::Env => "environment variables",
                Kind::Loosening => "permission-loosening settings",
                Kind::Setting => "settings only a trusted folder may set",
            })
            .collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// The definitions of `workspace`: its project and local settings layers, and `.mcp.json`
/// (not with `strict_mcp`, which reads no workspace server).
pub fn definitions(workspace: &Path, loaded: &Loaded, strict_mcp: bool) -> Definitions {
    let mut items = Vec::new();
    let mut files = Vec::new();
    let plane = ControlPlane::of(loaded);
    for layer in &loaded.layers {
        if !matches!(layer.scope, Scope::Project | Scope::Local) {
            continue;
        }
        let origin = relative(workspace, &layer.origin);
        super::allow::review(&layer.settings, &plane, strict_mcp, &mut |kind, text| {
            items.push(Item {
                kind,
                text,
                origin: origin.clone(),
            })
        });
    }
    let mcp_json = workspace.join(".mcp.json");
    if !strict_mcp {
        if let Ok(bytes) = std::fs::read(&mcp_json) {
            mcp_json_items(&bytes, &mut items);
            files.push(bytes);
        }
    }
    let mut hasher = Sha256::new();
    for item in &items {
        hasher.update([0]);
        hasher.update(item.origin.as_bytes());
        hasher.update([0]);
        hasher.update(item.text.as_bytes());
        if matches!(item.kind, Kind::Hook | Kind::Server | Kind::StatusLine) {
            for bytes in named_files(workspace, &item.text) {
                hasher.update([1]);
                hasher.update(&bytes);
            }
        }
    }
    for bytes in files {
        hasher.update([2]);
        hasher.update(&bytes);
    }
    let hash = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Definitions { items, hash }
}

/// Takes out of a project or local layer what needs trust (the other side of
/// [`super::allow::review`]); `plane` is [`ControlPlane::of`] the run's settings.
pub fn strip(settings: &mut Settings, plane: &ControlPlane) {
    *settings = super::allow::keep(settings, plane);
}

/// A server entry on one line: its command and arguments, or its URL.
pub(super) fn server(entry: &serde_json::Value) -> String {
    if let Some(command) = entry.get("command") {
        let mut words = vec![match command.as_str() {
            Some(c) => c.to_string(),
            None => command.to_string(),
        }];
        if let Some(args) = entry.get("args").and_then(|a| a.as_array()) {
            words.extend(args.iter().map(|a| match a.as_str() {
                Some(s) => s.to_string(),
                None => a.to_string(),
            }));
        }
        return words.join(" ");
    }
    match entry.get("url").and_then(|u| u.as_str()) {
        Some(url) => url.to_string(),
        None => entry.to_string(),
    }
}

/// The servers of `.mcp.json`; a file that does not parse is one item saying so (its bytes are
/// hashed all the same).
fn mcp_json_items(bytes: &[u8], items: &mut Vec<Item>) {
    let origin = ".mcp.json".to_string();
    let servers = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.get("mcpServers").and_then(|s| s.as_object()).cloned());
    match servers {
        Some(servers) => {
            for (name, entry) in &servers {
                items.push(Item {
                    kind: Kind::Server,
                    text: format!("MCP server `{name}`: {}", server(entry)),
                    origin: origin.clone(),
                });
            }
        }
        None => items.push(Item {
            kind: Kind::Server,
            text: "MCP servers (the file does not parse)".to_string(),
            origin,
        }),
    }
}

/// `origin` relative to the workspace when it is inside it.
fn relative(workspace: &Path, origin: &str) -> String {
    Path::new(origin)
        .strip_prefix(workspace)
        .map_or_else(|_| origin.to_string(), |p| p.display().to_string())
}

/// Programs that run a script named as their first operand.
const INTERPRETERS: [&str; 12] = [
    "sh", "bash", "zsh", "dash", "python", "python3", "node", "deno", "bun", "ruby", "perl", "php",
];

/// The contents of the workspace script a command runs (`.claude/hooks/check.sh`,
/// `python3 "$CLAUDE_PROJECT_DIR"/tools/server.py`), so editing it asks again: the program
/// when it is a workspace file, else an interpreter's first operand. Other arguments are not
/// read (a file the command itself writes would change the hash at every run).
fn named_files(workspace: &Path, command: &str) -> Vec<Vec<u8>> {
    let command = command.split_once(": ").map_or(command, |(_, c)| c);
    // A plugin's hook sets its folder's variable first.
    let command = troupe_plugins::expand::without_export(command);
    let mut words = command.split_whitespace().map(|w| {
        let w = w.trim_matches(|c| c == '"' || c == '\'');
        let w = [
            "$CLAUDE_PROJECT_DIR",
            "${CLAUDE_PROJECT_DIR}",
            "$TROUPE_PROJECT_DIR",
            "${TROUPE_PROJECT_DIR}",
        ]
        .iter()
        .find_map(|var| w.strip_prefix(var))
        .map_or_else(
            || w.to_string(),
            |rest| format!(".{}", rest.trim_start_matches(['"', '\''])),
        );
        w.trim_matches(|c| c == '"' || c == '\'').to_string()
    });
    let Some(program) = words.next() else {
        return Vec::new();
    };
    let name = Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let script = match INTERPRETERS.contains(&name) {
        true => words.find(|w| !w.starts_with('-')),
        false => Some(program),
    };
    script
        .and_then(|word| {
            let real = workspace.join(word).canonicalize().ok()?;
            let meta = real.metadata().ok()?;
            (real.starts_with(workspace) && meta.is_file() && meta.len() <= MAX_HASHED_FILE)
                .then(|| std::fs::read(&real).ok())
                .flatten()
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_a_command_runs_is_hashed_not_the_files_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".claude/hooks")).unwrap();
        std::fs::write(ws.join(".claude/hooks/a.sh"), "echo a").unwrap();
        std::fs::write(ws.join("marker"), "").unwrap();
        let read = |c: &str| named_files(&ws, c);
        assert_eq!(
            read("SessionStart hook: .claude/hooks/a.sh"),
            [b"echo a".to_vec()]
        );
        assert_eq!(
            read("x hook: bash -e \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/a.sh"),
            [b"echo a".to_vec()]
        );
        assert!(read("x hook: touch marker").is_empty());
        assert!(
            read("x hook: /etc/hostname").is_empty(),
            "outside the workspace"
        );
    }
}
