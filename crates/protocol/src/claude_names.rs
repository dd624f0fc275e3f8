//! Claude Code's names for troupe's built-in tools and their input fields, both ways: the one
//! mapping every Claude Code surface uses — hooks, `can_use_tool` questions and their
//! `updatedInput`, stream-json tool calls, permission denials, agent definitions' `tools`.
//! The model keeps troupe's own names (`read_file{path}`); a Claude Code surface sees
//! `Read{file_path}` with the path absolute. MCP tools (`mcp__server__tool`) and tools
//! without a Claude Code counterpart keep their names and fields.

use serde_json::{Map, Value};
use std::path::Path;

/// Claude Code's tool names and troupe's, pair by pair.
const TOOL_NAMES: [(&str, &str); 15] = [
    ("Bash", "bash"),
    ("Read", "read_file"),
    ("Edit", "edit_file"),
    ("Write", "write_file"),
    ("NotebookEdit", "notebook_edit"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("TodoWrite", "todo_write"),
    ("Task", "task"),
    ("WebFetch", "web_fetch"),
    ("WebSearch", "web_search"),
    ("AskUserQuestion", "ask_user_question"),
    ("EnterPlanMode", "enter_plan_mode"),
    ("ExitPlanMode", "exit_plan_mode"),
    ("ExitWorktree", "exit_worktree"),
];

/// Claude Code's other spellings of the same tools (`MultiEdit`, the newer `Agent`).
const ALIASES: [(&str, &str); 2] = [("MultiEdit", "edit_file"), ("Agent", "task")];

/// The file tools, whose `path` Claude Code calls `file_path` (`notebook_path` for
/// NotebookEdit), absolute.
const FILE_TOOLS: [&str; 4] = ["read_file", "write_file", "edit_file", "notebook_edit"];

/// Claude Code's name for a file tool's `path` field.
fn path_field(tool: &str) -> &'static str {
    match tool {
        "notebook_edit" => "notebook_path",
        _ => "file_path",
    }
}

/// Input fields named differently, per tool: (troupe's, Claude Code's).
fn renamed_fields(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "bash" => &[("timeout_ms", "timeout")],
        "grep" => &[("context", "-C"), ("case_insensitive", "-i")],
        _ => &[],
    }
}

/// Claude Code's name for troupe's tool `name`, when it has one.
pub fn claude_name(name: &str) -> Option<&'static str> {
    TOOL_NAMES
        .iter()
        .find(|(_, troupe)| *troupe == name)
        .map(|(claude, _)| *claude)
}

/// The name Claude Code shows for troupe's tool `name`: its own where it has one, else
/// troupe's (MCP tools, troupe's team tools).
pub fn shown_name(name: &str) -> &str {
    claude_name(name).unwrap_or(name)
}

/// troupe's name for Claude Code's tool `name` (`Read` → `read_file`, `MultiEdit` →
/// `edit_file`); other names (troupe's own, `mcp__…`) come back as given.
pub fn troupe_name(name: &str) -> &str {
    TOOL_NAMES
        .iter()
        .chain(ALIASES.iter())
        .find(|(claude, _)| *claude == name)
        .map_or(name, |(_, troupe)| *troupe)
}

/// Whether troupe's tool `name` is a file tool (its input has `path`).
pub fn is_file_tool(name: &str) -> bool {
    FILE_TOOLS.contains(&name)
}

/// The input of a call of troupe's tool `tool` as Claude Code shows it: `file_path`
/// (absolute, from `root`) for `path` in the file tools, and the other renamed fields.
pub fn input_to_claude(tool: &str, input: &Value, root: &Path) -> Value {
    let Some(map) = input.as_object() else {
        return input.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        if is_file_tool(tool) && key == "path" {
            let absolute = match value.as_str() {
                Some(path) => Value::from(root.join(path).display().to_string()),
                None => value.clone(),
            };
            out.insert(path_field(tool).into(), absolute);
            continue;
        }
        let key = renamed_fields(tool)
            .iter()
            .find(|(ours, _)| ours == key)
            .map_or(key.as_str(), |(_, theirs)| theirs);
        out.insert(key.to_string(), value.clone());
    }
    Value::Object(out)
}

/// An input written in Claude Code's fields (a hook's or a permission callback's
/// `updatedInput`) for troupe's tool `tool`: `file_path` (`notebook_path`) becomes `path` (relative to `root`
/// when inside it), renamed fields get troupe's names. Fields already in troupe's names stay;
/// where both spellings are present, Claude Code's wins (it is what the answer changed).
pub fn input_from_claude(tool: &str, input: &Value, root: &Path) -> Value {
    let Some(map) = input.as_object() else {
        return input.clone();
    };
    let mut out = map.clone();
    if is_file_tool(tool) {
        if let Some(file_path) = out.remove(path_field(tool)) {
            let path = match file_path.as_str() {
                Some(p) => {
                    let relative = Path::new(p).strip_prefix(root).ok();
                    Value::from(relative.map_or(p.to_string(), |r| r.display().to_string()))
                }
                None => file_path,
            };
            out.insert("path".into(), path);
        }
    }
    for (ours, theirs) in renamed_fields(tool) {
        if let Some(value) = out.remove(*theirs) {
            out.insert((*ours).to_string(), value);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_map_both_ways() {
        assert_eq!(claude_name("read_file"), Some("Read"));
        assert_eq!(claude_name("mcp__x__y"), None);
        assert_eq!(shown_name("spawn_teammate"), "spawn_teammate");
        assert_eq!(troupe_name("Read"), "read_file");
        assert_eq!(troupe_name("MultiEdit"), "edit_file");
        assert_eq!(troupe_name("Agent"), "task");
        assert_eq!(troupe_name("mcp__x__y"), "mcp__x__y");
        for (claude, troupe) in TOOL_NAMES {
            assert_eq!(claude_name(troupe), Some(claude));
            assert_eq!(troupe_name(claude), troupe);
        }
    }

    #[test]
    fn inputs_map_both_ways() {
        let root = Path::new("/ws");
        let edit = json!({"path": "src/a.rs", "old_string": "a", "new_string": "b"});
        let shown = input_to_claude("edit_file", &edit, root);
        assert_eq!(
            shown,
            json!({"file_path": "/ws/src/a.rs", "old_string": "a", "new_string": "b"})
        );
        assert_eq!(input_from_claude("edit_file", &shown, root), edit);
        let moved = json!({"file_path": "/elsewhere/b.rs", "content": "x"});
        assert_eq!(
            input_from_claude("write_file", &moved, root),
            json!({"path": "/elsewhere/b.rs", "content": "x"})
        );
        let bash = json!({"command": "ls", "timeout_ms": 5});
        let shown = input_to_claude("bash", &bash, root);
        assert_eq!(shown, json!({"command": "ls", "timeout": 5}));
        assert_eq!(input_from_claude("bash", &shown, root), bash);
        let grep = json!({"pattern": "x", "context": 2, "case_insensitive": true});
        let shown = input_to_claude("grep", &grep, root);
        assert_eq!(shown, json!({"pattern": "x", "-C": 2, "-i": true}));
        assert_eq!(input_from_claude("grep", &shown, root), grep);
        let notebook = json!({"path": "a.ipynb", "cell_id": "c1", "new_source": "x"});
        let shown = input_to_claude("notebook_edit", &notebook, root);
        assert_eq!(
            shown,
            json!({"notebook_path": "/ws/a.ipynb", "cell_id": "c1", "new_source": "x"})
        );
        assert_eq!(input_from_claude("notebook_edit", &shown, root), notebook);
        let mcp = json!({"path": "kept"});
        assert_eq!(input_to_claude("mcp__fs__read", &mcp, root), mcp);
    }
}
