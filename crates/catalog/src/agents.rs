//! Agent definitions (Claude Code's subagent files): Markdown under `.troupe/agents/`,
//! `.claude/agents/` (and the same under the user's home) with front matter `name`,
//! `description`, optional `tools`, `model` and `permissionMode`; the body is the system prompt.

use crate::frontmatter;
use std::path::{Path, PathBuf};

/// Where definitions are looked for, relative to the workspace and then to the home directory;
/// the first of a name wins.
const DIRS: [&str; 2] = [".troupe/agents", ".claude/agents"];

/// One agent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// Its name (`subagent_type`).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The tools it may use, in troupe's names; `None` for all.
    pub tools: Option<Vec<String>>,
    /// The model, if not the parent's.
    pub model: Option<String>,
    /// The permission mode it asks for (`permissionMode`), as written.
    pub permission_mode: Option<String>,
    /// Its system prompt (the body).
    pub prompt: String,
    /// The file.
    pub path: PathBuf,
}

/// A definition file that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedDefinition {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

/// The definitions found, and the files skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definitions {
    /// Usable definitions.
    pub agents: Vec<AgentDefinition>,
    /// Files that were skipped.
    pub skipped: Vec<SkippedDefinition>,
}

impl Definitions {
    /// The definition called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }
}

/// Claude Code's tool names in troupe's (`Read` → `read_file`); other names are kept as written
/// (troupe's own names, `mcp__…`).
pub fn troupe_tool_name(name: &str) -> String {
    match name {
        "Bash" => "bash",
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Glob" => "glob",
        "Grep" => "grep",
        "TodoWrite" => "todo_write",
        "Task" | "Agent" => "task",
        other => other,
    }
    .to_string()
}

/// Finds the agent definitions of a workspace and its user (`home`: `None` for none).
pub fn load(workspace: &Path, home: Option<&Path>) -> Definitions {
    let mut found = Definitions::default();
    let files = crate::entries_in(&DIRS, workspace, home, |p| {
        p.extension().is_some_and(|e| e == "md") && p.is_file()
    });
    for path in files {
        match read_definition(&path) {
            Ok(def) if found.get(&def.name).is_some() => found.skipped.push(SkippedDefinition {
                why: format!("an agent named '{}' was found earlier", def.name),
                path,
            }),
            Ok(def) => found.agents.push(def),
            Err(why) => found.skipped.push(SkippedDefinition { path, why }),
        }
    }
    found
}

fn read_definition(path: &Path) -> Result<AgentDefinition, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let doc = frontmatter::parse(&text)?;
    let name = doc
        .text("name")
        .ok_or("the front matter has no `name`")?
        .to_string();
    let description = doc
        .text("description")
        .ok_or("the front matter has no `description`")?
        .to_string();
    Ok(AgentDefinition {
        name,
        description,
        tools: doc
            .fields
            .get("tools")
            .map(|v| v.as_list().iter().map(|t| troupe_tool_name(t)).collect()),
        model: doc
            .text("model")
            .filter(|m| *m != "inherit")
            .map(str::to_string),
        permission_mode: doc.text("permissionMode").map(str::to_string),
        prompt: doc.body,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn definitions_are_read_with_claude_tool_names_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep, mcp__gh__pr\nmodel: inherit\npermissionMode: plan\n---\nYou review code.\n",
        )
        .unwrap();
        std::fs::write(agents.join("bad.md"), "---\nname: bad\n---\n").unwrap();
        std::fs::write(agents.join("notes.txt"), "not a definition").unwrap();
        let found = load(dir.path(), None);
        let r = found.get("reviewer").unwrap();
        assert_eq!(
            r.tools.as_deref().unwrap(),
            ["read_file", "grep", "mcp__gh__pr"]
        );
        assert_eq!(
            (r.model.as_deref(), r.permission_mode.as_deref()),
            (None, Some("plan"))
        );
        assert_eq!(r.prompt, "You review code.");
        assert_eq!(found.skipped.len(), 1);
        assert!(found.skipped[0].why.contains("description"));
    }
}
