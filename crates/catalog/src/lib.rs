//! What a project defines for its agents, in the folders Claude Code users already keep them:
//! skills (`.troupe/skills/*/SKILL.md`, `.claude/skills/*/SKILL.md`, and the user's) offered
//! through a catalog in the system prompt and `load_skill`; agent definitions
//! (`.troupe/agents/**/*.md`, `.claude/agents/**/*.md`) and the `task` subagent tool that uses
//! them; custom slash commands (`.claude/commands/**/*.md`) and output styles
//! (`.claude/output-styles/*.md`).
//!
//! Must not know: teams, stores or the CLI. It reads definition files and hands the agent crate
//! tools and prompt sections; a subagent is built through the agent crate's builder.

pub mod agents;
pub mod commands;
pub mod frontmatter;
pub mod output_styles;
pub mod skills;
pub mod subagent;

pub use skills::{Skill, Skills, SkillsExtension, SkippedSkill};

use std::path::{Path, PathBuf};

/// A file (skill, agent definition, command) that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

/// The entries of `dirs` under the workspace, then under the home directory, that `keep`
/// accepts: each folder's entries sorted, folders in order (so the first of a name wins).
/// Missing folders are skipped.
/// Like [`entries_in`], but also in every subfolder (not through symlinked folders, at most
/// [`MAX_DEPTH`] deep): Claude Code finds agent definitions in `.claude/agents/**`.
pub(crate) fn files_under(
    dirs: &[&str],
    workspace: &Path,
    home: Option<&Path>,
    keep: impl Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, keep: &dyn Fn(&Path) -> bool, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        let mut folders = Vec::new();
        for path in paths {
            let is_real_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
            if is_real_dir {
                folders.push(path);
            } else if keep(&path) {
                found.push(path);
            }
        }
        // A folder's own files come before its subfolders', so a top-level file wins a name.
        if depth < MAX_DEPTH {
            for folder in folders {
                walk(&folder, depth + 1, keep, found);
            }
        }
    }
    let roots = dirs.iter().map(|d| workspace.join(d)).chain(
        home.into_iter()
            .flat_map(|h| dirs.iter().map(move |d| h.join(d))),
    );
    let mut found = Vec::new();
    for root in roots {
        walk(&root, 0, &keep, &mut found);
    }
    found
}

/// How deep [`files_under`] looks below each folder.
const MAX_DEPTH: usize = 8;

pub(crate) fn entries_in(
    dirs: &[&str],
    workspace: &Path,
    home: Option<&Path>,
    keep: impl Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let roots = dirs.iter().map(|d| workspace.join(d)).chain(
        home.into_iter()
            .flat_map(|h| dirs.iter().map(move |d| h.join(d))),
    );
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| keep(p))
            .collect();
        paths.sort();
        found.extend(paths);
    }
    found
}

/// Writes `text` to `rel` under `root`, making the folders on the way (for the tests).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn write_under(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    use super::tool_schemas;
    use troupe_tools::schema::Built;

    #[test]
    fn tool_schemas_are_current() {
        let all = [
            Built::new::<crate::skills::LoadSkillInput>("LOAD_SKILL", tool_schemas::LOAD_SKILL),
            Built::new::<crate::subagent::TaskInput>("TASK", tool_schemas::TASK),
        ];
        assert_eq!(
            troupe_tools::schema::check(&all, env!("CARGO_MANIFEST_DIR"), "troupe-catalog"),
            Ok(())
        );
    }
}
