//! Server entries in Claude Code's format — `command`/`args`/`env` for stdio, `type: "http"` with
//! `url`/`headers` for streamable HTTP — gathered from every source by precedence. A bad entry
//! is an error naming its server and where it was written; it does not keep the others from
//! starting.

use crate::expand::{expand, ExpandError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Headers the transport sets itself; a configured value would break the session.
const RESERVED_HEADERS: [&str; 4] = ["accept", "mcp-session-id", "last-event-id", "content-type"];

/// How troupe reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportConfig {
    /// A child process speaking JSON-RPC lines on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to troupe's environment for it.
        env: BTreeMap<String, String>,
    },
    /// A remote server over streamable HTTP.
    Http {
        /// The endpoint (`https://…/mcp`).
        url: String,
        /// Headers sent with every request (`Authorization`, API keys).
        headers: BTreeMap<String, String>,
    },
    /// A remote server over the legacy HTTP+SSE transport (`"type": "sse"`): an event stream
    /// at `url` names where messages are posted.
    Sse {
        /// The event stream (`https://…/sse`).
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// A server living in the controlling process (the Agent SDK's `create_sdk_mcp_server`),
    /// reached through the control protocol's `mcp_message`.
    Sdk,
}

impl TransportConfig {
    /// `stdio`, `http`, `sse` or `sdk`, as `troupe mcp list` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportConfig::Stdio { .. } => "stdio",
            TransportConfig::Http { .. } => "http",
            TransportConfig::Sse { .. } => "sse",
            TransportConfig::Sdk => "sdk",
        }
    }
}

/// One valid server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's name: its tools are `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
}

/// Why an entry cannot be used; the message names the server and where it was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server `{server}` (in {origin}): {message}")]
pub struct ConfigError {
    /// The server's name.
    pub server: String,
    /// The source: `.mcp.json`, a settings file, `--mcp-config`.
    pub origin: String,
    /// What is wrong, in a sentence that says how to fix it.
    pub message: String,
}

/// One configured server: its entry as the highest-precedence source gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// The server's name.
    pub name: String,
    /// Where the entry was read.
    pub origin: String,
    /// The entry, or why it cannot be used.
    pub config: Result<ServerConfig, ConfigError>,
}

impl ServerEntry {
    /// `stdio`, `http`, or `unknown` for an entry that did not parse.
    pub fn kind(&self) -> &'static str {
        match &self.config {
            Ok(config) => config.transport.kind(),
            Err(_) => "unknown",
        }
    }
}

/// Every configured server by name. Sources are added lowest precedence first; a later entry of
/// the same name replaces the earlier one.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    entries: BTreeMap<String, ServerEntry>,
    /// Problems with a whole source (a `.mcp.json` that is not JSON): reported, never fatal.
    pub problems: Vec<String>,
}

/// A whole configuration source that cannot be used (its servers are not added).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{origin} is not valid JSON: {error}")]
    Json {
        /// Where the text came from.
        origin: String,
        /// The parser's message.
        error: String,
    },
    /// `mcpServers` is there but not an object.
    #[error("{0}: `mcpServers` must be an object")]
    NotAnObject(String),
    /// There is no `mcpServers` key.
    #[error("{0} has no `mcpServers` object (expected {{\"mcpServers\": {{\"name\": {{…}}}}}})")]
    Missing(String),
}

/// Reads an environment variable for `${…}` expansion.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl McpConfig {
    /// No servers.
    pub fn new() -> McpConfig {
        McpConfig::default()
    }

    /// Adds the entries of one `mcpServers` object read from `origin`.
    pub fn add_servers<'v>(
        &mut self,
        origin: &str,
        servers: impl IntoIterator<Item = (&'v String, &'v Value)>,
        lookup: Lookup<'_>,
    ) {
        for (name, value) in servers {
            let entry = ServerEntry {
                name: name.clone(),
                origin: origin.to_string(),
                config: parse_server(name, value, origin, lookup),
            };
            self.entries.insert(name.clone(), entry);
        }
    }

    /// Adds a document in `.mcp.json`'s shape (`{"mcpServers": {…}}`) read from `origin`.
    pub fn add_document(
        &mut self,
        origin: &str,
        text: &str,
        lookup: Lookup<'_>,
    ) -> Result<(), SourceError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SourceError::Json {
            origin: origin.to_string(),
            error: e.to_string(),
        })?;
        match value.get("mcpServers") {
            Some(Value::Object(servers)) => {
                self.add_servers(origin, servers, lookup);
                Ok(())
            }
            Some(_) => Err(SourceError::NotAnObject(origin.to_string())),
            None => Err(SourceError::Missing(origin.to_string())),
        }
    }

    /// Adds the file at `path` in `.mcp.json`'s shape; `Ok(false)` when it does not exist.
    pub fn add_file(&mut self, path: &Path, lookup: Lookup<'_>) -> Result<bool, SourceError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(SourceError::Read {
                    path: path.to_path_buf(),
                    error: e,
                })
            }
        };
        self.add_document(&path.display().to_string(), &text, lookup)?;
        Ok(true)
    }

    /// Adds `other`'s entries that `keep` keeps (by name) and its problems; returns the names
    /// left out.
    pub fn extend_where(&mut self, other: McpConfig, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let mut left_out = Vec::new();
        for (name, entry) in other.entries {
            match keep(&name) {
                true => {
                    self.entries.insert(name, entry);
                }
                false => left_out.push(name),
            }
        }
        self.problems.extend(other.problems);
        left_out
    }

    /// The entries by name.
    pub fn entries(&self) -> impl Iterator<Item = &ServerEntry> {
        self.entries.values()
    }

    /// The configured names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.entries.keys().map(String::as_str).collect()
    }

    /// Whether `name` is configured (valid or not).
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Whether `name` may name a server: letters, digits, `_` and `-`, and no `__`, which separates
/// the server from the tool in `mcp__<server>__<tool>`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses one entry.
pub fn parse_server(
    name: &str,
    value: &Value,
    origin: &str,
    lookup: Lookup<'_>,
) -> Result<ServerConfig, ConfigError> {
    let fail = |message: String| ConfigError {
        server: name.to_string(),
        origin: origin.to_string(),
        message,
    };
    if !valid_server_name(name) {
        return Err(fail(
            "a server name may hold only letters, digits, `_` and `-`, and no `__` (its tools are named mcp__<server>__<tool>)".into(),
        ));
    }
    let Value::Object(entry) = value else {
        return Err(fail("the entry must be an object".into()));
    };
    let expanded = |field: &str, text: &str| {
        expand(text, lookup).map_err(|e: ExpandError| fail(format!("`{field}`: {e}")))
    };
    let kind = match entry.get("type") {
        None if entry.contains_key("url") && !entry.contains_key("command") => "http",
        None => "stdio",
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err(fail("`type` must be a string".into())),
    };
    let transport = match kind {
        "stdio" => {
            let command = match entry.get("command") {
                Some(Value::String(c)) if !c.trim().is_empty() => expanded("command", c)?,
                Some(_) => return Err(fail("`command` must be a non-empty string".into())),
                None => {
                    return Err(fail(
                        "a stdio server needs a `command` (or give `\"type\": \"http\"` and a `url`)"
                            .into(),
                    ))
                }
            };
            let args = match entry.get("args") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(arg) => expanded("args", arg),
                        _ => Err(fail("every entry of `args` must be a string".into())),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(fail("`args` must be an array of strings".into())),
            };
            let env = string_map(entry.get("env"), "env", &fail, &expanded)?;
            TransportConfig::Stdio { command, args, env }
        }
        kind @ ("http" | "streamable-http" | "streamableHttp" | "sse") => {
            let url = match entry.get("url") {
                Some(Value::String(url)) => expanded("url", url)?,
                _ => return Err(fail(format!("an {kind} server needs a `url` string"))),
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(fail(format!(
                    "`url` must start with http:// or https://, not {url:?}"
                )));
            }
            let headers = string_map(entry.get("headers"), "headers", &fail, &expanded)?;
            for (header, value) in &headers {
                check_header(header, value).map_err(&fail)?;
            }
            match kind {
                "sse" => TransportConfig::Sse { url, headers },
                _ => TransportConfig::Http { url, headers },
            }
        }
        "sdk" => TransportConfig::Sdk,
        other => {
            return Err(fail(format!(
                "unknown `type` {other:?}; use \"stdio\", \"http\", \"sse\" or (from the Agent SDK) \"sdk\""
            )))
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
    })
}

/// An object of strings (`env`, `headers`), each value expanded.
fn string_map(
    value: Option<&Value>,
    field: &str,
    fail: &dyn Fn(String) -> ConfigError,
    expanded: &dyn Fn(&str, &str) -> Result<String, ConfigError>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let Some(value) = value else {
        return Ok(BTreeMap::new());
    };
    let Value::Object(map) = value else {
        return Err(fail(format!("`{field}` must be an object of strings")));
    };
    map.iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key.clone(), expanded(field, text)?)),
            _ => Err(fail(format!("`{field}.{key}` must be a string"))),
        })
        .collect()
}

/// Refuses a header HTTP cannot carry or the transport owns.
fn check_header(name: &str, value: &str) -> Result<(), String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!("`headers`: {name:?} is not a valid header name"));
    }
    if http::HeaderValue::from_str(value).is_err() {
        return Err(format!(
            "`headers.{name}`: the value holds characters a header cannot carry"
        ));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|reserved| name.eq_ignore_ascii_case(reserved))
    {
        return Err(format!(
            "`headers.{name}` is set by the transport itself and cannot be configured"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        (name == "API_KEY").then(|| "k123".to_string())
    }

    fn parse(value: Value) -> Result<ServerConfig, ConfigError> {
        parse_server("srv", &value, ".mcp.json", &env)
    }

    #[test]
    fn stdio_and_http_entries_parse_with_expansion() {
        let stdio = parse(json!({"command": "node", "args": ["s.js", "${HOME_DIR:-/tmp}"], "env": {"KEY": "${API_KEY}"}})).unwrap();
        assert_eq!(
            stdio.transport,
            TransportConfig::Stdio {
                command: "node".into(),
                args: vec!["s.js".into(), "/tmp".into()],
                env: BTreeMap::from([("KEY".into(), "k123".into())]),
            }
        );
        let http = parse(json!({"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}})).unwrap();
        assert_eq!(
            http.transport,
            TransportConfig::Http {
                url: "https://x.test/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer k123".into())]),
            }
        );
        assert_eq!(http.transport.kind(), "http");
        let sse = parse(json!({"type": "sse", "url": "http://h/sse", "headers": {"A": "b"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sse.transport,
            TransportConfig::Sse {
                url: "http://h/sse".into(),
                headers: BTreeMap::from([("A".to_string(), "b".to_string())]),
            }
        );
        // A url without a type is an http server.
        assert_eq!(
            parse(json!({"url": "http://127.0.0.1:1/mcp"}))
                .unwrap()
                .transport
                .kind(),
            "http"
        );
    }

    #[test]
    fn bad_entries_name_the_server_and_the_problem() {
        let cases = [
            (json!({"args": []}), "needs a `command`"),
            (
                json!({"command": 3}),
                "`command` must be a non-empty string",
            ),
            (
                json!({"command": "x", "args": "a b"}),
                "`args` must be an array",
            ),
            (
                json!({"command": "x", "env": {"A": 1}}),
                "`env.A` must be a string",
            ),
            (json!({"command": "${NOPE}"}), "${NOPE} is not set"),
            (json!({"type": "sse"}), "an sse server needs a `url`"),
            (json!({"type": "ws"}), "unknown `type`"),
            (
                json!({"type": "http", "url": "ftp://x"}),
                "must start with http",
            ),
            (
                json!({"type": "http", "url": "http://x", "headers": {"Mcp-Session-Id": "1"}}),
                "set by the transport",
            ),
            (
                json!({"type": "http", "url": "http://x", "headers": {"X": "a\nb"}}),
                "cannot carry",
            ),
            (json!("node server.js"), "must be an object"),
        ];
        for (value, expected) in cases {
            let err = parse(value.clone()).unwrap_err().to_string();
            assert!(
                err.starts_with("MCP server `srv` (in .mcp.json): "),
                "{err}"
            );
            assert!(err.contains(expected), "{value}: {err}");
        }
        let err = parse_server("a__b", &json!({"command": "x"}), "--mcp-config", &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `__`"), "{err}");
    }

    #[test]
    fn later_sources_replace_earlier_entries_and_bad_files_are_problems() {
        let mut config = McpConfig::new();
        config
            .add_document(
                ".mcp.json",
                r#"{"mcpServers": {"a": {"command": "one"}, "b": {"command": 1}}}"#,
                &env,
            )
            .unwrap();
        config
            .add_document(
                "--mcp-config",
                r#"{"mcpServers": {"a": {"command": "two"}}}"#,
                &env,
            )
            .unwrap();
        assert_eq!(config.names(), ["a", "b"]);
        let a = config.entries().find(|e| e.name == "a").unwrap();
        assert_eq!(a.origin, "--mcp-config");
        assert!(
            matches!(&a.config, Ok(c) if matches!(&c.transport, TransportConfig::Stdio { command, .. } if command == "two"))
        );
        let b = config.entries().find(|e| e.name == "b").unwrap();
        assert!(b.config.is_err());
        assert_eq!(b.kind(), "unknown");
        assert!(config
            .add_document("x.json", "{not json", &env)
            .unwrap_err()
            .to_string()
            .contains("x.json is not valid JSON"));
        assert!(config
            .add_document("x.json", "{}", &env)
            .unwrap_err()
            .to_string()
            .contains("no `mcpServers`"));
    }
}
