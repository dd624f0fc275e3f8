//! `troupe mcp add|add-json|get|remove`: Claude Code's `claude mcp` commands, editing the same
//! files (see [`crate::mcp_files`]): `.mcp.json` for the project scope, `~/.claude.json` for
//! the user and local scopes.

use crate::mcp_files::{check_entry, check_name, entry, McpFiles, McpScope};
use crate::render::sanitize::terminal;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The workspace the scopes are about: as `troupe mcp list` and a run find it (canonical).
fn files(cwd: Option<&Path>) -> Result<McpFiles> {
    let workspace = crate::workspace::root(cwd)?;
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", workspace.display()))?;
    Ok(McpFiles::new(&workspace))
}

/// What `mcp add` was given.
pub struct Added<'a> {
    pub name: &'a str,
    pub command_or_url: &'a str,
    pub args: &'a [String],
    pub transport: &'a str,
    pub env: &'a [String],
    pub header: &'a [String],
    pub scope: McpScope,
    pub cwd: Option<&'a PathBuf>,
}

/// `troupe mcp add`.
pub fn add(given: Added<'_>) -> Result<i32> {
    check_name(given.name)?;
    let server = entry(
        given.transport,
        given.command_or_url,
        given.args,
        given.env,
        given.header,
    )?;
    write_new(given.cwd, given.name, server, given.scope)
}

/// `troupe mcp add-json`.
pub fn add_json(name: &str, json: &str, scope: McpScope, cwd: Option<&PathBuf>) -> Result<i32> {
    check_name(name)?;
    let server = check_entry(json)?;
    write_new(cwd, name, server, scope)
}

fn write_new(cwd: Option<&PathBuf>, name: &str, server: Value, scope: McpScope) -> Result<i32> {
    let files = files(cwd.map(PathBuf::as_path))?;
    let kind = server
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("stdio")
        .to_string();
    let path = files.add(scope, name, server)?;
    println!(
        "{}",
        terminal(&format!(
            "Added {kind} MCP server {name} to {} config\nFile modified: {}",
            scope.as_str(),
            path.display()
        ))
    );
    Ok(0)
}

/// Where `name` is configured, highest precedence first.
fn found(files: &McpFiles, name: &str) -> Result<Vec<(McpScope, Value)>> {
    let mut found = Vec::new();
    for scope in McpScope::BY_PRECEDENCE {
        if let Some(server) = files.servers(scope)?.remove(name) {
            found.push((scope, server));
        }
    }
    Ok(found)
}

/// `troupe mcp get`: the entry that wins, with its scope.
pub fn get(name: &str, as_json: bool, cwd: Option<&PathBuf>) -> Result<i32> {
    let files = files(cwd.map(PathBuf::as_path))?;
    let Some((scope, server)) = found(&files, name)?.into_iter().next() else {
        eprintln!(
            "{}",
            terminal(&format!("No MCP server found with name: {name}"))
        );
        return Ok(1);
    };
    if as_json {
        let out = json!({"name": name, "scope": scope.as_str(), "file": files.path(scope)?.display().to_string(), "server": server});
        println!("{}", crate::render::sanitize::json_line(&out.to_string()));
        return Ok(0);
    }
    let text = |key: &str| server.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut lines = vec![
        format!("{name}:"),
        format!("  Scope: {}", scope.describe()),
        format!(
            "  Type: {}",
            server
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("stdio")
        ),
    ];
    let pairs = |key: &str, sep: &str| -> Vec<String> {
        server
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("    {k}{sep}{}", v.as_str().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    };
    if server.get("url").is_some() {
        lines.push(format!("  URL: {}", text("url")));
        let headers = pairs("headers", ": ");
        if !headers.is_empty() {
            lines.push("  Headers:".into());
            lines.extend(headers);
        }
    } else {
        lines.push(format!("  Command: {}", text("command")));
        let args: Vec<&str> = server
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        lines.push(format!("  Args: {}", args.join(" ")));
        let env = pairs("env", "=");
        if !env.is_empty() {
            lines.push("  Environment:".into());
            lines.extend(env);
        }
    }
    lines.push(String::new());
    lines.push(format!(
        "To remove this server, run: troupe mcp remove \"{name}\" -s {}",
        scope.as_str()
    ));
    println!("{}", terminal(&lines.join("\n")));
    Ok(0)
}

/// `troupe mcp remove`: from the scope given, else from the one scope that has it.
pub fn remove(name: &str, scope: Option<McpScope>, cwd: Option<&PathBuf>) -> Result<i32> {
    let files = files(cwd.map(PathBuf::as_path))?;
    let scope = match scope {
        Some(scope) => scope,
        None => {
            let scopes: Vec<McpScope> = found(&files, name)?.into_iter().map(|(s, _)| s).collect();
            match scopes[..] {
                [] => {
                    eprintln!(
                        "{}",
                        terminal(&format!("No MCP server found with name: \"{name}\""))
                    );
                    return Ok(1);
                }
                [only] => only,
                _ => {
                    let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
                    eprintln!(
                        "{}",
                        terminal(&format!(
                            "MCP server \"{name}\" exists in multiple scopes: {}\nTo remove it from one, run: troupe mcp remove \"{name}\" -s <scope>",
                            names.join(", ")
                        ))
                    );
                    return Ok(1);
                }
            }
        }
    };
    if !files.remove(scope, name)? {
        eprintln!(
            "{}",
            terminal(&format!(
                "No MCP server named \"{name}\" in {} config",
                scope.as_str()
            ))
        );
        return Ok(1);
    }
    println!(
        "{}",
        terminal(&format!(
            "Removed MCP server {name} from {} config\nFile modified: {}",
            scope.as_str(),
            files.path(scope)?.display()
        ))
    );
    Ok(0)
}
