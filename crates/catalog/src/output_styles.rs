//! Output styles (Claude Code's `outputStyle` setting and `.claude/output-styles/*.md`): a
//! style's instructions go into the lead's system prompt, and — unless its front matter says
//! `keep-coding-instructions: true` — the prompt stops presenting the agent as a coding agent,
//! as Claude Code drops its software-engineering instructions for a non-default style. The
//! built-in styles are `default` (no change), `Explanatory` and `Learning`.

use crate::frontmatter;
use std::path::{Path, PathBuf};
use troupe_agent::{Extension, ExtensionContext};

/// The folders styles are looked for in, relative to the workspace and then to the home
/// directory; the first of a name wins.
const DIRS: [&str; 2] = [".claude/output-styles", ".troupe/output-styles"];

/// The style in force when none is chosen.
pub const DEFAULT: &str = "default";

/// One output style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    /// Its name (front matter `name`, else the file name).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Whether the coding instructions stay (`keep-coding-instructions`).
    pub keep_coding_instructions: bool,
    /// The instructions.
    pub prompt: String,
    /// The file; `None` for a built-in style.
    pub path: Option<PathBuf>,
}

/// The styles found (built-ins first), and the files skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyles {
    /// Usable styles.
    pub styles: Vec<OutputStyle>,
    /// Files that could not be used, and why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl OutputStyles {
    /// The style called `name` (case does not matter, as in Claude Code's picker).
    pub fn get(&self, name: &str) -> Option<&OutputStyle> {
        self.styles
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Every style's name, `default` first.
    pub fn names(&self) -> Vec<String> {
        let mut names = vec![DEFAULT.to_string()];
        names.extend(self.styles.iter().map(|s| s.name.clone()));
        names
    }

    /// The style `name` chooses: `None` for `default`, an error naming the choices for an
    /// unknown one.
    pub fn choose(&self, name: &str) -> Result<Option<&OutputStyle>, String> {
        if name.eq_ignore_ascii_case(DEFAULT) {
            return Ok(None);
        }
        self.get(name).map(Some).ok_or_else(|| {
            format!(
                "output style '{name}' is not defined; the styles are: {} (add your own as .claude/output-styles/<name>.md)",
                self.names().join(", ")
            )
        })
    }
}

fn built_in(name: &str, description: &str, prompt: &str) -> OutputStyle {
    OutputStyle {
        name: name.to_string(),
        description: description.to_string(),
        keep_coding_instructions: true,
        prompt: prompt.to_string(),
        path: None,
    }
}

/// The built-in styles and those of the workspace and the user (`None`: not read).
pub fn load(workspace: Option<&Path>, home: Option<&Path>) -> OutputStyles {
    let mut found = OutputStyles {
        styles: vec![
            built_in(
                "Explanatory",
                "Explains the choices made and the codebase's patterns while working",
                "While you work, teach: before and after a notable step, add a short \"Insight\" \
                 section (two or three points) on why this approach was chosen, what pattern \
                 of this codebase it follows, and what trade-off it makes. Keep the insights \
                 specific to this code, not general advice.",
            ),
            built_in(
                "Learning",
                "Works with the user as a learner: leaves small, meaningful parts for them to write",
                "Work with the user as someone learning. Do the routine parts yourself, but \
                 where a small piece of code carries a real design decision (five to ten lines), \
                 leave it for the user: put a `TODO(human)` marker there, explain what it must \
                 do and what to consider, and wait for them. Add short \"Insight\" notes on why \
                 things are done as they are.",
            ),
        ],
        skipped: Vec::new(),
    };
    let files = [workspace, home].into_iter().flatten().flat_map(|base| {
        crate::entries_in(&DIRS, base, None, |p| {
            p.extension().is_some_and(|e| e == "md") && p.is_file()
        })
    });
    for path in files {
        match read_style(&path) {
            Ok(style) if found.get(&style.name).is_some() => found.skipped.push((
                path,
                format!("a style named '{}' was found earlier", style.name),
            )),
            Ok(style) => found.styles.push(style),
            Err(why) => found.skipped.push((path, why)),
        }
    }
    found
}

fn read_style(path: &Path) -> Result<OutputStyle, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let doc = frontmatter::parse(&text)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = doc.text("name").map_or(stem, str::to_string);
    if name.eq_ignore_ascii_case(DEFAULT) {
        return Err("`default` is the built-in style without changes; pick another name".into());
    }
    Ok(OutputStyle {
        name,
        description: doc.text("description").unwrap_or("").to_string(),
        keep_coding_instructions: doc
            .text("keep-coding-instructions")
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        prompt: doc.body,
        path: Some(path.to_path_buf()),
    })
}

/// The identity of a lead whose style drops the coding instructions.
pub const STYLED_IDENTITY: &str = "You are troupe, an agent working in the user's workspace. You have tools to read, search and edit files and run commands; how you work with the user and how you answer is set by the output style below.";

/// Puts a style's instructions at the end of the agent's own part of the system prompt.
pub struct OutputStyleExtension {
    style: OutputStyle,
}

impl OutputStyleExtension {
    /// The extension for `style`.
    pub fn new(style: OutputStyle) -> OutputStyleExtension {
        OutputStyleExtension { style }
    }
}

impl Extension for OutputStyleExtension {
    fn name(&self) -> &str {
        "output-style"
    }
    fn agent_prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![format!(
            "# Output style: {}\n{}",
            self.style.name, self.style.prompt
        )]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn custom_styles_load_and_names_are_case_blind() {
        let ws = tempfile::tempdir().unwrap();
        crate::write_under(
            ws.path(),
            ".claude/output-styles/pirate.md",
            "---\ndescription: Talks like a pirate\n---\nAnswer as a pirate would.\n",
        );
        crate::write_under(
            ws.path(),
            ".claude/output-styles/terse.md",
            "---\nname: Terse\nkeep-coding-instructions: true\n---\nOne line answers.\n",
        );
        crate::write_under(
            ws.path(),
            ".claude/output-styles/broken.md",
            "no front matter",
        );
        let styles = load(Some(ws.path()), None);
        assert_eq!(
            styles.names(),
            ["default", "Explanatory", "Learning", "pirate", "Terse"]
        );
        let pirate = styles.choose("Pirate").unwrap().unwrap();
        assert!(!pirate.keep_coding_instructions);
        assert_eq!(pirate.prompt, "Answer as a pirate would.");
        assert!(styles.get("terse").unwrap().keep_coding_instructions);
        assert!(styles.choose("default").unwrap().is_none());
        assert!(styles.choose("nope").unwrap_err().contains("pirate"));
        assert_eq!(styles.skipped.len(), 1);
    }
}
