//! `${CLAUDE_PLUGIN_ROOT}` (and `$CLAUDE_PLUGIN_ROOT`) in a plugin's hooks and MCP servers:
//! replaced by the plugin's folder in every string, and set in the environment a hook command
//! or a server starts with, as Claude Code does.

use serde_json::{Map, Value};
use std::path::Path;

/// The variable's name.
pub const VAR: &str = "CLAUDE_PLUGIN_ROOT";

/// `text` with the variable replaced by `root`.
pub fn text(text: &str, root: &Path) -> String {
    let root = root.display().to_string();
    text.replace(&format!("${{{VAR}}}"), &root)
        .replace(&format!("${VAR}"), &root)
}

/// Every string in `value` expanded.
pub fn value(value: Value, root: &Path) -> Value {
    match value {
        Value::String(s) => Value::String(text(&s, root)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| self::value(v, root)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, self::value(v, root)))
                .collect(),
        ),
        other => other,
    }
}

/// One `{matcher, hooks: [...]}` entry: strings expanded, and each command hook's command run
/// with the variable exported (`export CLAUDE_PLUGIN_ROOT='…'; command`).
pub fn hook_matcher(entry: Value, root: &Path) -> Value {
    let mut entry = value(entry, root);
    if let Some(Value::Array(hooks)) = entry.get_mut("hooks") {
        for hook in hooks.iter_mut() {
            let is_command = hook
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "command");
            if let (true, Some(Value::String(command))) = (is_command, hook.get_mut("command")) {
                *command = format!("{}{command}", export_prefix(root));
            }
        }
    }
    entry
}

/// The prefix that sets the variable for a hook's shell command.
pub fn export_prefix(root: &Path) -> String {
    format!("export {VAR}={}; ", quote(&root.display().to_string()))
}

/// A command with [`export_prefix`] taken off (for reading the program it runs).
pub fn without_export(command: &str) -> &str {
    match command.strip_prefix(&format!("export {VAR}=")) {
        Some(rest) => rest.split_once("; ").map_or(command, |(_, after)| after),
        None => command,
    }
}

/// One MCP server entry: strings expanded, and the variable in its `env` (a stdio server's).
pub fn server(entry: Value, root: &Path) -> Value {
    let mut entry = value(entry, root);
    if let Value::Object(map) = &mut entry {
        if map.contains_key("command") {
            let env = map
                .entry("env")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(env) = env {
                env.entry(VAR)
                    .or_insert_with(|| Value::String(root.display().to_string()));
            }
        }
    }
    entry
}

/// `s` in single quotes for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
