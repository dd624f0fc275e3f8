//! The control plane of a workspace-write call: what decides what runs outside the sandbox or
//! what troupe does, none of it the agent's to write. The kernel refuses writes to what exists
//! (mounted read-only, see [`super::mounts`]); what does not exist cannot be a mount point, so
//! whatever a call creates there is removed when the call is over and the result says so.
//!
//! Protected: the whole `.troupe` folder (team state, sessions, cron, agents, settings) and the
//! whole `.claude` folder, `.mcp.json`; in `.git`, `config`, `config.worktree`, `hooks`, `info`,
//! `commondir`, `modules` and `worktrees` (what a commit writes — objects, refs, the index,
//! `HEAD`, logs — stays writable); in a linked worktree, its `.git` file and, in the directory
//! it points at, `commondir`, `gitdir` and `config.worktree`; each hook script the settings name
//! and the folder it is in (an interpreter puts that folder first on its import path). A `.git`
//! the call creates is cleaned before the call ends: hooks removed, its config cut to the keys
//! `git init` and `git clone` write. A `.claude` or `.troupe` that is a symlink is pinned: the
//! link is put back if a call re-points or replaces it. Only the workspace root is surveyed (not
//! nested projects, not `--add-dir` directories).

use super::mounts::{Kind, MountPlan};
use std::io;
use std::path::{Path, PathBuf};

/// The folders and files of troupe and Claude Code protected at the workspace root.
pub const CONTROL_PATHS: [&str; 3] = [".troupe", ".claude", ".mcp.json"];

/// What `.git` holds that is protected (`config.worktree` only where it exists).
const GIT_ENTRIES: [&str; 4] = ["config", "hooks", "info", "commondir"];

/// What `.git` holds that is protected where it exists: troupe itself makes `worktrees` (a
/// teammate's worktree) while a call may run, so one that appears is not the call's to remove.
const GIT_PRESENT_ENTRIES: [&str; 2] = ["modules", "worktrees"];

/// What a linked worktree's own git directory holds that is protected.
const WORKTREE_GIT_ENTRIES: [&str; 3] = ["commondir", "gitdir", "config.worktree"];

/// The config keys a new repository may keep (those `git init` and `git clone` write); every
/// other key of a `.git/config` a call created is removed, since many make git run a program.
const NEW_REPO_KEYS: [&str; 10] = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "init.defaultbranch",
    "extensions.objectformat",
    "extensions.refstorage",
];

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
    /// Control folders that are symlinks, with where they pointed.
    links: Vec<(PathBuf, PathBuf)>,
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
                for entry in GIT_PRESENT_ENTRIES {
                    if git.join(entry).exists() {
                        out.note(workspace, git.join(entry));
                    }
                }
                let worktree_config = git.join("config.worktree");
                if worktree_config.exists() {
                    out.note(workspace, worktree_config);
                }
            }
            Ok(_) => {
                out.note(workspace, git.clone());
                // A linked worktree: what its own git directory says about where the repository
                // is and how it is configured.
                if let Some(dir) = linked_git_dir(&git) {
                    for entry in WORKTREE_GIT_ENTRIES {
                        let path = dir.join(entry);
                        if path.exists() {
                            out.present.push(path);
                        }
                    }
                }
            }
            Err(_) => out.no_git = Some(git),
        }
        for name in CONTROL_PATHS {
            let path = workspace.join(name);
            if let Ok(target) = std::fs::read_link(&path) {
                out.links.push((path.clone(), target));
            }
            out.note(workspace, path);
        }
        // Hook scripts outside the workspace are not the workspace's to protect (Landlock keeps
        // them read-only unless a writable root covers them).
        for path in extra.iter().map(|p| workspace.join(p)) {
            if path.starts_with(workspace) {
                if let Some(folder) = path.parent().filter(|dir| *dir != workspace) {
                    out.note(workspace, folder.to_path_buf());
                }
                out.note(workspace, path);
            }
        }
        out
    }

    fn note(&mut self, workspace: &Path, path: PathBuf) {
        if self.present.contains(&path) || self.absent.contains(&path) {
            return;
        }
        // Beneath a folder already protected whole (or already to be removed).
        if self
            .present
            .iter()
            .chain(&self.absent)
            .any(|p| path.starts_with(p))
        {
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
        for (link, target) in &self.links {
            if std::fs::read_link(link).ok().as_ref() != Some(target)
                && (std::fs::symlink_metadata(link).is_err() || remove(link))
                && std::os::unix::fs::symlink(target, link).is_ok()
            {
                removed.push(format!("the re-pointed {}", link.display()));
            }
        }
        for path in &self.absent {
            if std::fs::symlink_metadata(path).is_ok() && remove(path) {
                removed.push(path.display().to_string());
            }
        }
        if let Some(git) = &self.no_git {
            removed.extend(clean_new_repository(git));
        }
        (!removed.is_empty()).then(|| {
            format!(
                "(troupe removed {}: a command may not change troupe's or git's controls — the \
                 .troupe and .claude folders, .mcp.json, git's config and hooks, hook scripts \
                 and their folders decide what runs outside the sandbox. Use write_file or \
                 edit_file, which ask the user, to change them)\n",
                removed.join(", ")
            )
        })
    }
}

/// The git directory a linked worktree's `.git` file points at (`gitdir: PATH`).
fn linked_git_dir(git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let dir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let dir = Path::new(dir);
    let dir = match dir.is_absolute() {
        true => dir.to_path_buf(),
        false => git_file.parent()?.join(dir),
    };
    dir.canonicalize().ok()
}

/// Cleans a `.git` a call created: removes its hooks and every config key a new repository
/// does not have. Returns what it removed.
fn clean_new_repository(git: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(meta) = std::fs::symlink_metadata(git) else {
        return removed;
    };
    if !meta.is_dir() {
        // A `.git` file or link points git at another repository: not the call's to make.
        if remove(git) {
            removed.push(git.display().to_string());
        }
        return removed;
    }
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
    for name in ["commondir", "config.worktree"] {
        let path = git.join(name);
        if std::fs::symlink_metadata(&path).is_ok() && remove(&path) {
            removed.push(path.display().to_string());
        }
    }
    let config = git.join("config");
    if let Ok(text) = std::fs::read_to_string(&config) {
        let (kept, dropped) = new_repository_config(&text);
        if !dropped.is_empty() && std::fs::write(&config, kept).is_ok() {
            removed.push(format!("{} from {}", dropped.join(", "), config.display()));
        }
    } else if std::fs::symlink_metadata(&config).is_ok() && remove(&config) {
        removed.push(config.display().to_string());
    }
    removed
}

/// `text` (a git config) with only [`NEW_REPO_KEYS`] and the `remote.*`/`branch.*` names, urls
/// and refspecs a clone writes kept; the other keys, named.
fn new_repository_config(text: &str) -> (String, Vec<String>) {
    let mut kept = String::new();
    let mut dropped = Vec::new();
    let mut section = String::new();
    let mut header = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if let Some(inner) = trimmed.strip_prefix('[') {
            let inner = inner.split(']').next().unwrap_or_default();
            section = match inner.split_once(' ') {
                Some((name, sub)) => format!("{}.{}", name.to_lowercase(), sub.trim_matches('"')),
                None => inner.to_lowercase(),
            };
            header = Some(format!("[{inner}]\n"));
            continue;
        }
        let key = trimmed
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or_default()
            .to_lowercase();
        let first = section.split('.').next().unwrap_or_default();
        let allowed = NEW_REPO_KEYS.contains(&format!("{section}.{key}").as_str())
            || (first == "remote" && matches!(key.as_str(), "url" | "fetch"))
            || (first == "branch" && matches!(key.as_str(), "remote" | "merge"));
        // A line ending in `\` continues the value: only plain lines are kept.
        if allowed && !trimmed.ends_with('\\') && !section.contains('\\') {
            if let Some(header) = header.take() {
                kept.push_str(&header);
            }
            kept.push_str(&format!("\t{trimmed}\n"));
        } else {
            dropped.push(format!("{section}.{key}"));
        }
    }
    (kept, dropped)
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
    fn a_survey_finds_present_and_absent_paths_and_anchors_their_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("tools/hooks")).unwrap();
        std::fs::write(root.join("tools/hooks/check.py"), "").unwrap();
        std::fs::write(root.join("root-hook.sh"), "").unwrap();
        let hooks = [
            PathBuf::from("tools/hooks/check.py"),
            PathBuf::from("root-hook.sh"),
        ];
        let found = Protected::survey(&root, &hooks);
        assert!(found.present().contains(&root.join(".git/config")));
        assert!(found.present().contains(&root.join(".git/hooks")));
        // The control folders whole, and the folder of a hook script with the script.
        assert!(found.present().contains(&root.join(".claude")));
        assert!(found.present().contains(&root.join("tools/hooks")));
        assert!(!found.present().contains(&root.join("tools/hooks/check.py")));
        // A script at the root: the file only, never the workspace itself.
        assert!(found.present().contains(&root.join("root-hook.sh")));
        assert!(!found.present().contains(&root));
        assert!(found.anchors.contains(&root.join(".git")));
        assert!(found.anchors.contains(&root.join("tools")));
        assert!(found.absent.contains(&root.join(".mcp.json")));
        assert!(found.absent.contains(&root.join(".troupe")));
        assert!(found.absent.contains(&root.join(".git/info")));
        assert!(found.absent.contains(&root.join(".git/commondir")));
        // What the call creates is removed afterwards, and the note names it.
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        std::fs::write(root.join(".git/commondir"), "/elsewhere").unwrap();
        std::fs::create_dir_all(root.join(".troupe/agents")).unwrap();
        let note = found.after_call().unwrap();
        assert!(note.contains(".mcp.json"), "{note}");
        assert!(note.contains("commondir"), "{note}");
        assert!(!root.join(".mcp.json").exists());
        assert!(!root.join(".git/commondir").exists());
        assert!(!root.join(".troupe").exists());
        assert!(found.after_call().is_none());
    }

    #[test]
    fn a_symlinked_control_folder_is_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("shared-claude")).unwrap();
        std::fs::create_dir_all(root.join("evil")).unwrap();
        std::os::unix::fs::symlink("shared-claude", root.join(".claude")).unwrap();
        let found = Protected::survey(&root, &[]);
        // The bind follows the link: the folder it points at is protected.
        assert!(found.present().contains(&root.join(".claude")));
        std::fs::remove_file(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink("evil", root.join(".claude")).unwrap();
        let note = found.after_call().unwrap();
        assert!(note.contains("re-pointed"), "{note}");
        assert_eq!(
            std::fs::read_link(root.join(".claude")).unwrap(),
            PathBuf::from("shared-claude")
        );
    }

    #[test]
    fn a_new_repository_keeps_only_what_git_init_writes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let found = Protected::survey(&root, &[]);
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit.sample"), "").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ./evil\n\tbare = false\n\
             [remote \"origin\"]\n\turl = https://example.invalid/x\n\tuploadpack = ./evil\n\
             [alias]\n\tst = !./evil\n",
        )
        .unwrap();
        let note = found.after_call().unwrap();
        assert!(note.contains("core.fsmonitor"), "{note}");
        assert!(note.contains("post-checkout"), "{note}");
        let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        assert!(!config.contains("evil"), "{config}");
        assert!(config.contains("repositoryformatversion = 0"), "{config}");
        assert!(
            config.contains("url = https://example.invalid/x"),
            "{config}"
        );
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert!(!root.join(".git/hooks/post-checkout").exists());
    }
}
