//! Agent definitions (Claude Code's subagent files): Markdown under `.troupe/agents/`,
//! `.claude/agents/` (and the same under the user's home) with front matter `name`,
//! `description`, optional `tools`, `model` and `permissionMode`; the body is the system prompt.
//! Subfolders are searched too (`.claude/agents/review/security.md`), as Claude Code does; and
//! `--agents` JSON ([`from_json`]) defines more for one session, ahead of every file.

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
pub type SkippedDefinition = crate::SkippedFile;

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
/// (troupe's own names, `mcp__…`). The mapping is `troupe_protocol::claude_names`.
pub fn troupe_tool_name(name: &str) -> String {
    troupe_protocol::claude_names::troupe_name(name).to_string()
}

/// Finds the agent definitions of a workspace and its user (`home`: `None` for none).
pub fn load(workspace: &Path, home: Option<&Path>) -> Definitions {
    let mut found = Definitions::default();
    let files = crate::files_under(&DIRS, workspace, home, |p| {
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

/// The definitions in one folder (and its subfolders) or one file, each named
/// `namespace:name` (a plugin's `agents/`: `feature-dev:code-explorer`).
pub fn load_path(path: &Path, namespace: &str) -> Definitions {
    let mut found = Definitions::default();
    let is_md = |p: &Path| p.extension().is_some_and(|e| e == "md") && p.is_file();
    let files = match path.is_dir() {
        true => crate::files_under(&[""], path, None, is_md),
        false if is_md(path) => vec![path.to_path_buf()],
        false => return found,
    };
    for file in files {
        match read_definition(&file) {
            Ok(mut def) => {
                def.name = format!("{namespace}:{}", def.name);
                match found.get(&def.name).is_some() {
                    true => found.skipped.push(SkippedDefinition {
                        why: format!("an agent named '{}' was found earlier", def.name),
                        path: file,
                    }),
                    false => found.agents.push(def),
                }
            }
            Err(why) => found.skipped.push(SkippedDefinition { path: file, why }),
        }
    }
    found
}

/// Claude Code's `--agents` JSON: `{"reviewer": {"description": "…", "prompt": "…", "tools":
/// ["Read", "Grep"], "model": "sonnet"}}`. The definitions come first in `into` (they win a
/// name over the files, as in Claude Code) and a file of the same name is reported skipped.
pub fn add_json(into: &mut Definitions, json: &str) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("--agents is not JSON: {e}"))?;
    let object = value
        .as_object()
        .ok_or("--agents must be an object of agent definitions by name")?;
    let mut defined = Vec::new();
    for (name, def) in object {
        let text = |key: &str| def.get(key).and_then(serde_json::Value::as_str);
        let description = text("description")
            .ok_or_else(|| format!("--agents: '{name}' has no description"))?
            .to_string();
        let prompt = text("prompt")
            .ok_or_else(|| format!("--agents: '{name}' has no prompt"))?
            .to_string();
        let tools = match def.get("tools") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Array(list)) => Some(
                list.iter()
                    .map(|t| {
                        t.as_str()
                            .map(troupe_tool_name)
                            .ok_or_else(|| format!("--agents: '{name}'.tools holds a non-string"))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err(format!("--agents: '{name}'.tools must be a list")),
        };
        defined.push(AgentDefinition {
            name: name.clone(),
            description,
            tools,
            model: text("model")
                .filter(|m| *m != "inherit")
                .map(str::to_string),
            permission_mode: text("permissionMode").map(str::to_string),
            prompt,
            path: PathBuf::from("--agents"),
        });
    }
    let files = std::mem::take(&mut into.agents);
    into.agents = defined;
    for def in files {
        match into.get(&def.name).is_some() {
            true => into.skipped.push(SkippedDefinition {
                why: format!("--agents defines '{}' for this session", def.name),
                path: def.path,
            }),
            false => into.agents.push(def),
        }
    }
    Ok(())
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
    fn subfolders_are_searched_and_a_top_level_file_wins_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".claude/agents");
        let def = |name: &str| format!("---\nname: {name}\ndescription: d\n---\nbody {name}\n");
        std::fs::create_dir_all(agents.join("review/deep")).unwrap();
        std::fs::write(agents.join("review/security.md"), def("security")).unwrap();
        std::fs::write(agents.join("review/deep/perf.md"), def("perf")).unwrap();
        std::fs::write(agents.join("review/dup.md"), def("top")).unwrap();
        std::fs::write(agents.join("top.md"), def("top")).unwrap();
        let found = load(dir.path(), None);
        let mut names: Vec<&str> = found.agents.iter().map(|a| a.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["perf", "security", "top"]);
        assert!(found.get("top").unwrap().path.ends_with("agents/top.md"));
        assert_eq!(found.skipped.len(), 1, "{:?}", found.skipped);
    }

    #[test]
    fn agents_json_defines_agents_ahead_of_files() {
        let dir = tempfile::tempdir().unwrap();
        crate::write_under(
            dir.path(),
            ".claude/agents/reviewer.md",
            "---\nname: reviewer\ndescription: from a file\n---\nfile\n",
        );
        let mut found = load(dir.path(), None);
        add_json(
            &mut found,
            r#"{"reviewer": {"description": "Reviews code", "prompt": "You review.", "tools": ["Read", "Grep"], "model": "inherit"}}"#,
        )
        .unwrap();
        let r = found.get("reviewer").unwrap();
        assert_eq!(r.description, "Reviews code");
        assert_eq!(r.tools.as_deref().unwrap(), ["read_file", "grep"]);
        assert_eq!(r.model, None);
        assert_eq!(found.agents.len(), 1);
        assert_eq!(found.skipped.len(), 1);
        assert!(add_json(&mut found, "[1]").unwrap_err().contains("object"));
        assert!(add_json(&mut found, r#"{"x": {"prompt": "p"}}"#)
            .unwrap_err()
            .contains("'x' has no description"));
    }

    #[test]
    fn definitions_are_read_with_claude_tool_names_mapped() {
        let dir = tempfile::tempdir().unwrap();
        crate::write_under(dir.path(), ".claude/agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep, mcp__gh__pr\nmodel: inherit\npermissionMode: plan\n---\nYou review code.\n");
        crate::write_under(dir.path(), ".claude/agents/bad.md", "---\nname: bad\n---\n");
        crate::write_under(dir.path(), ".claude/agents/notes.txt", "not a definition");
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
