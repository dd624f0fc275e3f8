//! The protected files of a workspace-write call: the files whose content makes git or troupe
//! run programs or grant permissions. The kernel refuses writes to those that exist (they are
//! mounted read-only, see [`super::mounts`]); those that do not exist cannot be mount points, so
//! one a call creates is removed when the call is over and the result says so.
//!
//! Protected: `.git/config`, `.git/config.worktree`, `.git/hooks/**`, `.git/info/**` (or the
//! `.git` file of a worktree), `.claude/settings.json`, `.claude/settings.local.json`,
//! `.troupe/settings.json`, `.troupe/settings.local.json`, `.mcp.json`, and the hook scripts the
//! settings name (`SandboxConfig::protected`). Only the workspace root is surveyed (not nested
//! projects, not `--add-dir` directories).

use super::mounts::{Kind, MountPlan};
use std::io;
use std::path::{Path, PathBuf};

/// The settings and MCP files protected at the workspace root.
pub const SETTINGS_FILES: [&str; 5] = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".troupe/settings.json",
    ".troupe/settings.local.json",
    ".mcp.json",
];

/// What `.git` holds that is protected (`config.worktree` only where it exists).
const GIT_ENTRIES: [&str; 3] = ["config", "hooks", "info"];

/// The protected paths of one call's workspace, as found before the call.
#[derive(Debug, Default, Clone)]
pub struct Protected {
    /// Existing protected paths (mounted read-only).
    present: Vec<PathBuf>,
    /// Directories between the workspace and a present path (made mount points).
    anchors: Vec<PathBuf>,
    /// Protected paths that did not exist; one that exists after the call is removed.
    absent: Vec<PathBuf>,
    /// Whether `.git` itself did not exist (a call may `git init`).
    no_git: Option<PathBuf>,
}

impl Protected {
    /// Surveys `workspace` (canonical) and the extra protected paths (absolute, or relative to
    /// the workspace).
    pub fn survey(workspace: &Path, extra: &[PathBuf]) -> Protected {
        let mut out = Protected::default();
        let git = workspace.join(".git");
        match std::fs::symlink_metadata(&git) {
            Ok(meta) if meta.is_dir() => {
                for entry in GIT_ENTRIES {
                    out.note(workspace, git.join(entry));
                }
                let worktree_config = git.join("config.worktree");
                if worktree_config.exists() {
                    out.note(workspace, worktree_config);
                }
            }
            Ok(_) => out.note(workspace, git),
            Err(_) => out.no_git = Some(git),
        }
        for file in SETTINGS_FILES {
            out.note(workspace, workspace.join(file));
        }
        // Hook scripts outside the workspace are not the workspace's to protect (Landlock keeps
        // them read-only unless a writable root covers them).
        for path in extra.iter().map(|p| workspace.join(p)) {
            if path.starts_with(workspace) {
                out.note(workspace, path);
            }
        }
        out
    }

    fn note(&mut self, workspace: &Path, path: PathBuf) {
        if self.present.contains(&path) || self.absent.contains(&path) {
            return;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(_) => {
                // Each directory between the workspace and the file becomes a mount point.
                if let Ok(inside) = path.strip_prefix(workspace) {
                    let mut dir = workspace.to_path_buf();
                    let parts: Vec<_> = inside.components().collect();
                    for part in parts.iter().take(parts.len().saturating_sub(1)) {
                        dir.push(part);
                        if !self.anchors.contains(&dir) {
                            self.anchors.push(dir.clone());
                        }
                    }
                }
                self.present.push(path);
            }
            Err(_) => {
                if path.starts_with(workspace) {
                    self.absent.push(path);
                }
            }
        }
    }

    /// The existing protected paths.
    pub fn present(&self) -> &[PathBuf] {
        &self.present
    }

    /// Adds the mounts that protect the present paths to `plan`: anchors (outermost first), then
    /// read-only binds.
    pub(crate) fn plan(&self, plan: &mut MountPlan) -> io::Result<()> {
        let mut anchors = self.anchors.clone();
        anchors.sort_by_key(|p| p.components().count());
        for anchor in &anchors {
            if !self.present.contains(anchor) {
                plan.push(Kind::Anchor, anchor)?;
            }
        }
        for path in &self.present {
            plan.push(Kind::ReadOnly, path)?;
        }
        Ok(())
    }

    /// After the call (every process of it ended): removes each protected path the call
    /// created, and says what was removed and why, or `None` when nothing was.
    pub fn after_call(&self) -> Option<String> {
        let mut removed = Vec::new();
        for path in &self.absent {
            if std::fs::symlink_metadata(path).is_ok() && remove(path) {
                removed.push(path.display().to_string());
            }
        }
        if let Some(git) = &self.no_git {
            // A new repository: its config is git's own, but a hook in it would run outside.
            let hooks = git.join("hooks");
            if let Ok(entries) = std::fs::read_dir(&hooks) {
                for entry in entries.flatten() {
                    let path = entry.path();
                    let sample = path.extension().is_some_and(|e| e == "sample");
                    if !sample && remove(&path) {
                        removed.push(path.display().to_string());
                    }
                }
            }
        }
        (!removed.is_empty()).then(|| {
            format!(
                "(troupe removed {}: a command may not create protected files — git's config \
                 and hooks, the .claude/.troupe settings files, .mcp.json and hook scripts decide \
                 what runs outside the sandbox. Use write_file or edit_file, which ask the user, \
                 to change them)\n",
                removed.join(", ")
            )
        })
    }
}

fn remove(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_survey_finds_present_and_absent_files_and_anchors_their_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(root.join(".claude/hooks/check.sh"), "").unwrap();
        let found = Protected::survey(&root, &[PathBuf::from(".claude/hooks/check.sh")]);
        assert!(found.present().contains(&root.join(".git/config")));
        assert!(found.present().contains(&root.join(".git/hooks")));
        assert!(found
            .present()
            .contains(&root.join(".claude/hooks/check.sh")));
        assert!(found.anchors.contains(&root.join(".git")));
        assert!(found.anchors.contains(&root.join(".claude/hooks")));
        assert!(found.absent.contains(&root.join(".mcp.json")));
        assert!(found.absent.contains(&root.join(".git/info")));
        // A file the call creates is removed afterwards, and the note names it.
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        let note = found.after_call().unwrap();
        assert!(note.contains(".mcp.json"), "{note}");
        assert!(!root.join(".mcp.json").exists());
        assert!(found.after_call().is_none());
    }
}
