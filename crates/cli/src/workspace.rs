//! Which directory a command works on: `--cwd` exactly as given, else the workspace the
//! current directory is in — the nearest folder holding `.troupe/`, else the git root, else
//! the current directory — so troupe run from `src/` finds the team its lead started at the
//! top, and never starts a second `.troupe/` below it.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The workspace a command works on: `explicit` (`--cwd`) as given, else the one found from the
/// current directory (canonical).
pub fn root(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let start = cwd
        .canonicalize()
        .with_context(|| format!("the current directory {} is not accessible", cwd.display()))?;
    let home = std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok());
    let temp = std::env::temp_dir().canonicalize().ok();
    Ok(find(&start, home.as_deref(), temp.as_deref()))
}

/// Before a command creates `<root>/.troupe/`: keeps it out of the user's `git status`
/// (through the repository's `info/exclude`, never the user's `.gitignore`). Nothing to do when
/// it exists already (whoever made it did this) or outside git.
pub fn before_creating_troupe_dir(root: &Path) {
    if !root.join(".troupe").exists() {
        announce_troupe_dir(root);
        exclude_troupe_dir(root);
    }
}

/// Before `<root>/.troupe/` is first made outside any git repository, says where troupe keeps
/// its state (a folder that is not a project is easy to start in by mistake). Inside a
/// repository, or once the folder exists, it says nothing.
pub fn announce_troupe_dir(root: &Path) {
    let troupe = root.join(".troupe");
    if troupe.exists() || root.ancestors().any(|dir| dir.join(".git").exists()) {
        return;
    }
    crate::render::sanitize::errln!(
        "troupe: note: {} is not in a git repository; troupe keeps this folder's sessions and teams in {} (start troupe in a project's root to keep them there)",
        root.display(),
        troupe.display()
    );
}

/// Keeps the `.troupe` directory troupe just made out of the user's `git status` (through the
/// repository's `info/exclude`, never the user's `.gitignore`); outside git there is nothing to do.
pub fn exclude_troupe_dir(workspace: &std::path::Path) {
    if exclude_is_settled(workspace) {
        return;
    }
    if let Err(e) = troupe_team::worktree::ensure_troupe_excluded(workspace) {
        tracing::warn!(error = %e, "could not add .troupe/ to the repository's info/exclude");
    }
}

/// Whether keeping `<root>/.troupe/` out of `git status` is known, without running git, to need
/// nothing: no repository anywhere above `root`, or the exclude line already in the
/// `info/exclude` of the repository whose `.git` directory is nearest. Anything else (a `.git`
/// file of a linked worktree or submodule, `GIT_DIR`, a path that is not UTF-8) is git's to
/// answer. Spares every start-up two git processes.
pub fn exclude_is_settled(root: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() || std::env::var_os("GIT_WORK_TREE").is_some() {
        return false;
    }
    for dir in root.ancestors() {
        let dot_git = dir.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                let Some(below) = root.strip_prefix(dir).ok().and_then(Path::to_str) else {
                    return false;
                };
                let prefix = match below.is_empty() {
                    true => String::new(),
                    false => format!("{below}/"),
                };
                let line = troupe_team::worktree::exclude::exclude_line(&prefix);
                return std::fs::read_to_string(dot_git.join("info/exclude"))
                    .is_ok_and(|text| text.lines().any(|l| l.trim() == line));
            }
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return false,
        }
    }
    true
}

/// Walks up from `start`: the first folder holding `.troupe/` or `.git` is the workspace.
/// Above `home` nothing is looked at, and the `.troupe/` of `home` itself (the user's
/// settings), of the temporary directory and of `/` count only when `start` is that folder.
fn find(start: &Path, home: Option<&Path>, temp: Option<&Path>) -> PathBuf {
    for dir in start.ancestors() {
        let shared = Some(dir) == home || Some(dir) == temp || dir.parent().is_none();
        if dir.join(".troupe").is_dir() && (dir == start || !shared) {
            return dir.to_path_buf();
        }
        if dir.join(".git").exists() {
            return dir.to_path_buf();
        }
        if Some(dir) == home {
            break;
        }
    }
    start.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_is_settled_outside_git_and_once_the_line_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap().join("proj");
        let sub = top.join("src");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(exclude_is_settled(&sub), "no repository: nothing to do");
        std::fs::create_dir_all(top.join(".git/info")).unwrap();
        assert!(
            !exclude_is_settled(&sub),
            "a repository without the line: git adds it"
        );
        std::fs::write(top.join(".git/info/exclude"), "# troupe\n/src/.troupe/\n").unwrap();
        assert!(exclude_is_settled(&sub));
        assert!(!exclude_is_settled(&top), "the top has a line of its own");
        std::fs::write(top.join(".git/info/exclude"), "/.troupe/\n").unwrap();
        assert!(exclude_is_settled(&top));
        std::fs::remove_dir_all(top.join(".git")).unwrap();
        std::fs::write(top.join(".git"), "gitdir: elsewhere\n").unwrap();
        assert!(!exclude_is_settled(&sub), "a .git file: git knows where");
    }

    #[test]
    fn the_nearest_troupe_dir_then_the_git_root_then_the_start() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("home/proj");
        let sub = top.join("src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        let home = tmp.path().join("home");
        let none = find(&sub, Some(&home), None);
        assert_eq!(none, sub, "no marker: the start");
        std::fs::create_dir_all(home.join(".troupe")).unwrap();
        assert_eq!(
            find(&sub, Some(&home), None),
            sub,
            "the user's ~/.troupe is not a workspace"
        );
        assert_eq!(find(&home, Some(&home), None), home);
        std::fs::create_dir_all(top.join(".git")).unwrap();
        assert_eq!(find(&sub, Some(&home), None), top, "the git root");
        std::fs::create_dir_all(top.join("src/.troupe")).unwrap();
        assert_eq!(
            find(&sub, Some(&home), None),
            top.join("src"),
            "the nearest .troupe wins"
        );
    }
}
