//! Skills (s20; Claude Code's `SKILL.md`): a folder whose `SKILL.md` has front matter `name`,
//! `description` and optional `allowed-tools`. Only the catalog — each skill's name and
//! description — goes into the system prompt; `load_skill{name}` hands the body and the
//! skill's folder to the model when it decides the skill applies.

use crate::frontmatter;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::{Extension, ExtensionContext};
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// The folders skills are looked for in, relative to the workspace and then to the home
/// directory; the first of a name wins.
const SKILL_DIRS: [&str; 2] = [".troupe/skills", ".claude/skills"];

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (front matter `name`).
    pub name: String,
    /// When to use it (front matter `description`): the catalog line.
    pub description: String,
    /// The tools it expects (front matter `allowed-tools`), for information.
    pub allowed_tools: Vec<String>,
    /// Its folder.
    pub dir: PathBuf,
    /// The instructions after the front matter.
    pub body: String,
}

/// A `SKILL.md` that could not be used, and why.
pub type SkippedSkill = crate::SkippedFile;

/// The skills found, and the files skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// Usable skills, by name.
    pub skills: Vec<Skill>,
    /// Files that were skipped (malformed, duplicate name).
    pub skipped: Vec<SkippedSkill>,
}

impl Skills {
    /// The catalog section for the system prompt; `None` when there are no skills.
    pub fn catalog(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Skills\nSkills are instructions for particular kinds of work. When a task matches \
             a skill's description, call load_skill{name} first and follow what it says.\n",
        );
        for s in &self.skills {
            out.push_str(&format!("- {}: {}\n", s.name, s.description));
        }
        Some(out)
    }
}

/// Finds the skills of a workspace and its user (`home`: `None` for none).
pub fn load(workspace: &Path, home: Option<&Path>) -> Skills {
    let mut found = Skills::default();
    let dirs = crate::entries_in(&SKILL_DIRS, workspace, home, |p| {
        p.join("SKILL.md").is_file()
    });
    for dir in dirs {
        let path = dir.join("SKILL.md");
        match read_skill(&dir, &path) {
            Ok(skill) if found.skills.iter().any(|s| s.name == skill.name) => {
                found.skipped.push(SkippedSkill {
                    path,
                    why: format!("a skill named '{}' was found earlier", skill.name),
                });
            }
            Ok(skill) => found.skills.push(skill),
            Err(why) => found.skipped.push(SkippedSkill { path, why }),
        }
    }
    found
}

/// The skills in one folder of skill folders (a plugin's `skills/`), each named
/// `namespace:name` as Claude Code names a plugin's skills.
pub fn load_path(root: &Path, namespace: &str) -> Skills {
    let mut found = Skills::default();
    let dirs = crate::entries_in(&[""], root, None, |p| p.join("SKILL.md").is_file());
    for dir in dirs {
        let path = dir.join("SKILL.md");
        match read_skill(&dir, &path) {
            Ok(mut skill) => {
                skill.name = format!("{namespace}:{}", skill.name);
                found.skills.push(skill);
            }
            Err(why) => found.skipped.push(SkippedSkill { path, why }),
        }
    }
    found
}

fn read_skill(dir: &Path, path: &Path) -> Result<Skill, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let doc = frontmatter::parse(&text)?;
    let name = doc
        .text("name")
        .ok_or("the front matter has no `name`")?
        .to_string();
    if name.contains(['/', '\\']) || name.contains("..") || name.chars().any(char::is_whitespace) {
        return Err(format!(
            "name '{name}' must be one word without `/` or `..`"
        ));
    }
    let description = doc
        .text("description")
        .ok_or("the front matter has no `description`")?
        .to_string();
    Ok(Skill {
        name,
        description,
        allowed_tools: doc
            .fields
            .get("allowed-tools")
            .map(frontmatter::Value::as_list)
            .unwrap_or_default(),
        dir: dir.to_path_buf(),
        body: doc.body,
    })
}

/// Input of `load_skill`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadSkillInput {
    /// The skill's name, as the catalog lists it.
    pub name: String,
}

/// `load_skill{name}`: the skill's instructions and where its files are.
pub struct LoadSkill {
    skills: Arc<Skills>,
}

#[async_trait]
impl Tool for LoadSkill {
    fn name(&self) -> &str {
        "load_skill"
    }
    fn description(&self) -> &str {
        "Load a skill's full instructions by name (the Skills section of the system prompt lists \
         them). Returns the instructions and the skill's folder, whose files you can read."
    }
    fn input_schema(&self) -> Value {
        schema_of::<LoadSkillInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LOAD_SKILL)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: LoadSkillInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Some(skill) = self.skills.skills.iter().find(|s| s.name == input.name) else {
            let known: Vec<&str> = self.skills.skills.iter().map(|s| s.name.as_str()).collect();
            return ToolOutput::error(format!(
                "no skill named '{}'; the skills are: {}",
                input.name,
                known.join(", ")
            ));
        };
        let folder = match skill.dir.strip_prefix(ctx.workspace.root()) {
            Ok(rel) => format!(
                "Skill folder: {} (read its files with read_file)",
                rel.display()
            ),
            Err(_) => format!(
                "Skill folder: {} (outside the workspace: its files cannot be read with the file tools)",
                skill.dir.display()
            ),
        };
        let tools = if skill.allowed_tools.is_empty() {
            String::new()
        } else {
            format!(
                "\nTools this skill uses: {}",
                skill.allowed_tools.join(", ")
            )
        };
        ToolOutput::ok(format!(
            "<skill name=\"{}\">\n{}\n</skill>\n{folder}{tools}",
            skill.name, skill.body
        ))
    }
}

/// Gives an agent the skill catalog and `load_skill`; installs nothing when there are no skills.
pub struct SkillsExtension {
    skills: Arc<Skills>,
}

impl SkillsExtension {
    /// The extension over the skills found.
    pub fn new(skills: Skills) -> SkillsExtension {
        SkillsExtension {
            skills: Arc::new(skills),
        }
    }

    /// The skills, in catalog order.
    pub fn skills(&self) -> &[Skill] {
        &self.skills.skills
    }

    /// The skills' names, in catalog order.
    pub fn names(&self) -> Vec<String> {
        self.skills.skills.iter().map(|s| s.name.clone()).collect()
    }
}

impl Extension for SkillsExtension {
    fn name(&self) -> &str {
        "skills"
    }
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        if self.skills.skills.is_empty() {
            return Vec::new();
        }
        vec![Arc::new(LoadSkill {
            skills: self.skills.clone(),
        })]
    }
    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        self.skills.catalog().into_iter().collect()
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
