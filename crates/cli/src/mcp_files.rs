//! The files Claude Code keeps MCP servers in, by scope: `project` is the workspace's
//! `.mcp.json` (`{"mcpServers": {…}}`); `user` is `~/.claude.json`'s top-level `mcpServers`;
//! `local` is `~/.claude.json`'s `projects["<workspace>"].mcpServers`. Read as JSON values
//! and changed entry by entry, so every other key of those files stays as it was; each write
//! replaces the file atomically with its old permissions.

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Where a server is configured (`--scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpScope {
    /// This workspace, for this user only (`~/.claude.json`, under the workspace's path).
    Local,
    /// This workspace, for everyone (`.mcp.json`, checked in).
    Project,
    /// Every workspace of this user (`~/.claude.json`).
    User,
}

impl McpScope {
    /// Highest precedence first, as Claude Code resolves a name found in several.
    pub const BY_PRECEDENCE: [McpScope; 3] = [McpScope::Local, McpScope::Project, McpScope::User];

    /// The scope's name, as `--scope` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            McpScope::Local => "local",
            McpScope::Project => "project",
            McpScope::User => "user",
        }
    }

    /// What the scope means, as Claude Code describes it.
    pub fn describe(self) -> &'static str {
        match self {
            McpScope::Local => "Local config (private to you in this project)",
            McpScope::Project => "Project config (shared via .mcp.json)",
            McpScope::User => "User config (available in all your projects)",
        }
    }
}

/// `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when that is set, as Claude Code).
pub fn claude_json() -> Option<PathBuf> {
    let dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    dir("CLAUDE_CONFIG_DIR")
        .or_else(|| dir("HOME"))
        .map(|d| d.join(".claude.json"))
}

/// The servers of each scope for `workspace` (an absolute path).
pub struct McpFiles {
    workspace: PathBuf,
    claude_json: Option<PathBuf>,
}

impl McpFiles {
    /// The files for `workspace`, with `~/.claude.json` where [`claude_json`] finds it.
    pub fn new(workspace: &Path) -> McpFiles {
        McpFiles {
            workspace: workspace.to_path_buf(),
            claude_json: claude_json(),
        }
    }

    /// The file a scope's servers live in.
    pub fn path(&self, scope: McpScope) -> Result<PathBuf> {
        match scope {
            McpScope::Project => Ok(self.workspace.join(".mcp.json")),
            McpScope::Local | McpScope::User => self
                .claude_json
                .clone()
                .context("no home directory (HOME) for ~/.claude.json"),
        }
    }

    /// The key of this workspace under `~/.claude.json`'s `projects`.
    fn project_key(&self) -> String {
        self.workspace.display().to_string()
    }

    /// A scope's servers (empty when its file or entry is missing).
    pub fn servers(&self, scope: McpScope) -> Result<Map<String, Value>> {
        let Ok(path) = self.path(scope) else {
            return Ok(Map::new());
        };
        let document = read(&path)?;
        Ok(self
            .servers_in(&document, scope)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default())
    }

    fn servers_in<'d>(&self, document: &'d Value, scope: McpScope) -> Option<&'d Value> {
        match scope {
            McpScope::Project | McpScope::User => document.get("mcpServers"),
            McpScope::Local => document
                .get("projects")?
                .get(self.project_key())?
                .get("mcpServers"),
        }
    }

    /// Adds `name` to a scope; refused when the scope has it already.
    pub fn add(&self, scope: McpScope, name: &str, server: Value) -> Result<PathBuf> {
        let path = self.path(scope)?;
        let mut document = read(&path)?;
        let servers = self.servers_mut(&mut document, scope, &path)?;
        if servers.contains_key(name) {
            bail!(
                "MCP server {name} already exists in {} config ({})",
                scope.as_str(),
                path.display()
            );
        }
        servers.insert(name.to_string(), server);
        write(&path, &document)?;
        Ok(path)
    }

    /// Removes `name` from a scope; whether it was there.
    pub fn remove(&self, scope: McpScope, name: &str) -> Result<bool> {
        let path = self.path(scope)?;
        let mut document = read(&path)?;
        if self
            .servers_in(&document, scope)
            .and_then(|s| s.get(name))
            .is_none()
        {
            return Ok(false);
        }
        self.servers_mut(&mut document, scope, &path)?.remove(name);
        write(&path, &document)?;
        Ok(true)
    }

    /// The scope's server object, made where missing.
    fn servers_mut<'d>(
        &self,
        document: &'d mut Value,
        scope: McpScope,
        path: &Path,
    ) -> Result<&'d mut Map<String, Value>> {
        let not_object = |what: &str| {
            anyhow::anyhow!(
                "{}: {what} is not a JSON object; fix it by hand",
                path.display()
            )
        };
        let root = document
            .as_object_mut()
            .ok_or_else(|| not_object("the file"))?;
        let holder = match scope {
            McpScope::Project | McpScope::User => root,
            McpScope::Local => root
                .entry("projects")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .ok_or_else(|| not_object("`projects`"))?
                .entry(self.project_key())
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .ok_or_else(|| not_object("this project's entry"))?,
        };
        holder
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| not_object("`mcpServers`"))
    }
}

/// A JSON file as a value (`{}` when it does not exist).
fn read(path: &Path) -> Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; fix it by hand", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Map::new())),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Replaces `path` with `document` (pretty, two spaces, as Claude Code writes) through a temp
/// file renamed over it, keeping the old file's permissions (`~/.claude.json` is private).
fn write(path: &Path, document: &Value) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let text = format!("{}\n", serde_json::to_string_pretty(document)?);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// The entry `troupe mcp add` writes, as `claude mcp add` writes it: `{"type": "stdio",
/// "command", "args", "env"}`, or `{"type": "sse"|"http", "url", "headers"}`.
pub fn entry(
    transport: &str,
    command_or_url: &str,
    args: &[String],
    env: &[String],
    headers: &[String],
) -> Result<Value> {
    let mut value = Map::new();
    value.insert("type".into(), Value::from(transport));
    match transport {
        "stdio" => {
            if !headers.is_empty() {
                bail!("--header is for sse and http servers; a stdio server takes --env");
            }
            let mut vars = Map::new();
            for pair in env {
                let (key, val) = pair
                    .split_once('=')
                    .filter(|(k, _)| !k.trim().is_empty())
                    .with_context(|| format!("--env {pair}: expected KEY=value"))?;
                vars.insert(key.trim().to_string(), Value::from(val));
            }
            value.insert("command".into(), Value::from(command_or_url));
            value.insert("args".into(), Value::from(args.to_vec()));
            value.insert("env".into(), Value::Object(vars));
        }
        "sse" | "http" => {
            if !env.is_empty() {
                bail!("--env is for stdio servers; an {transport} server takes --header");
            }
            if !args.is_empty() {
                bail!(
                    "an {transport} server takes a URL and no arguments (got {})",
                    args.join(" ")
                );
            }
            if !(command_or_url.starts_with("http://") || command_or_url.starts_with("https://")) {
                bail!("{command_or_url}: an {transport} server needs an http:// or https:// URL");
            }
            value.insert("url".into(), Value::from(command_or_url));
            let mut map = Map::new();
            for header in headers {
                let (key, val) = header
                    .split_once(':')
                    .filter(|(k, _)| !k.trim().is_empty())
                    .with_context(|| format!("--header {header}: expected \"Name: value\""))?;
                map.insert(key.trim().to_string(), Value::from(val.trim()));
            }
            if !map.is_empty() {
                value.insert("headers".into(), Value::Object(map));
            }
        }
        other => bail!("--transport {other}: expected stdio, sse or http"),
    }
    Ok(Value::Object(value))
}

/// A server name Claude Code accepts: letters, digits, `-` and `_`.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!("invalid MCP server name `{name}`: use letters, digits, hyphens and underscores");
    }
    Ok(())
}

/// `add-json`'s entry: an object with a `command` (stdio) or a `url` (sse, http).
pub fn check_entry(json: &str) -> Result<Value> {
    let value: Value = serde_json::from_str(json).context("the server is not valid JSON")?;
    let Some(object) = value.as_object() else {
        bail!("the server must be a JSON object, e.g. {{\"type\": \"stdio\", \"command\": \"npx\", \"args\": []}}");
    };
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("stdio");
    let field = match kind {
        "stdio" => "command",
        "sse" | "http" | "ws" => "url",
        other => bail!("unknown server type `{other}`: expected stdio, sse or http"),
    };
    if object
        .get(field)
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        bail!("a {kind} server needs a non-empty string `{field}`");
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(dir: &Path) -> McpFiles {
        McpFiles {
            workspace: dir.join("ws"),
            claude_json: Some(dir.join(".claude.json")),
        }
    }

    #[test]
    fn each_scope_edits_its_own_place_and_leaves_every_other_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join(".claude.json");
        std::fs::write(
            &home,
            r#"{"numStartups": 7, "projects": {"/other": {"allowedTools": ["x"]}}}"#,
        )
        .unwrap();
        let files = files(dir.path());
        let server = json!({"type": "stdio", "command": "a", "args": [], "env": {}});
        files.add(McpScope::User, "u", server.clone()).unwrap();
        files.add(McpScope::Local, "l", server.clone()).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&home).unwrap()).unwrap();
        assert_eq!(doc["numStartups"], 7);
        assert_eq!(doc["projects"]["/other"]["allowedTools"], json!(["x"]));
        assert_eq!(doc["mcpServers"]["u"], server);
        let key = files.project_key();
        assert_eq!(doc["projects"][key.as_str()]["mcpServers"]["l"], server);
        assert!(files.servers(McpScope::Project).unwrap().is_empty());
        let again = files.add(McpScope::User, "u", server.clone());
        assert!(again.is_err_and(|e| e.to_string().contains("already exists in user config")));
        assert!(files.remove(McpScope::User, "u").unwrap());
        assert!(!files.remove(McpScope::User, "u").unwrap());
        assert!(files.servers(McpScope::User).unwrap().is_empty());
        assert_eq!(files.servers(McpScope::Local).unwrap().len(), 1);
    }

    #[test]
    fn entries_are_written_as_claude_code_writes_them() {
        let args = vec!["-y".to_string(), "srv".to_string()];
        let stdio = entry("stdio", "npx", &args, &["K=v=w".into()], &[]).unwrap();
        assert_eq!(
            stdio,
            json!({"type": "stdio", "command": "npx", "args": ["-y", "srv"], "env": {"K": "v=w"}})
        );
        let http = entry(
            "http",
            "https://x/mcp",
            &[],
            &[],
            &["Authorization: Bearer t".into()],
        )
        .unwrap();
        assert_eq!(
            http,
            json!({"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer t"}})
        );
        assert!(entry("sse", "npx", &[], &[], &[]).is_err());
        assert!(entry("stdio", "npx", &[], &["NOEQUALS".into()], &[]).is_err());
        assert!(check_name("a b").is_err());
        assert!(check_entry(r#"{"type": "http"}"#).is_err());
        assert!(check_entry(r#"{"command": "x"}"#).is_ok());
    }
}
