//! Workspace fixtures for tests: a temporary directory with file and git helpers.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A temporary workspace directory, removed when dropped.
#[derive(Debug)]
pub struct TempWorkspace {
    dir: TempDir,
}

impl TempWorkspace {
    /// Creates an empty workspace.
    ///
    /// # Panics
    /// When the temporary directory cannot be created: this is test tooling.
    pub fn new() -> TempWorkspace {
        let dir = tempfile::Builder::new()
            .prefix("troupe-ws-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary workspace: {e}"));
        TempWorkspace { dir }
    }

    /// The workspace root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The absolute path of `rel` inside the workspace.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `content` to `rel`, creating parent directories; returns the absolute path.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        std::fs::write(&path, content)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// Reads `rel` as UTF-8 text.
    ///
    /// # Panics
    /// When the file is missing or not UTF-8.
    pub fn read(&self, rel: impl AsRef<Path>) -> String {
        let path = self.join(rel);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// True when `rel` exists.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.join(rel).exists()
    }

    /// Runs a real `git init` here, with a local identity so later commits work anywhere.
    ///
    /// # Panics
    /// When git is missing or fails.
    pub fn git_init(&self) {
        self.git(&["init", "-q", "-b", "main"]);
        self.git(&["config", "user.email", "testkit@troupe.invalid"]);
        self.git(&["config", "user.name", "troupe testkit"]);
        self.git(&["config", "commit.gpgsign", "false"]);
    }

    /// Stages everything and commits it (worktrees need a first commit).
    ///
    /// # Panics
    /// When git fails.
    pub fn git_commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// Runs git with `args` in the workspace and returns its stdout.
    ///
    /// # Panics
    /// When git cannot be run or exits unsuccessfully.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run git: {e}"));
        if !out.status.success() {
            panic!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Default for TempWorkspace {
    fn default() -> Self {
        TempWorkspace::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_creates_parents_and_read_returns_the_content() {
        let ws = TempWorkspace::new();
        let path = ws.write("src/deep/lib.rs", "fn main() {}\n");
        assert_eq!(path, ws.path().join("src/deep/lib.rs"));
        assert!(ws.exists("src/deep/lib.rs"));
        assert_eq!(ws.read("src/deep/lib.rs"), "fn main() {}\n");
        assert!(!ws.exists("missing.txt"));
    }

    #[test]
    fn git_init_makes_a_repository_that_can_commit() {
        let ws = TempWorkspace::new();
        ws.git_init();
        assert!(ws.path().join(".git").is_dir());
        ws.write("README.md", "hello\n");
        ws.git_commit_all("first");
        let head = ws.git(&["rev-parse", "HEAD"]);
        assert_eq!(head.trim().len(), 40, "{head}");
        assert_eq!(ws.git(&["status", "--porcelain"]), "");
    }

    #[test]
    fn the_directory_is_removed_on_drop() {
        let ws = TempWorkspace::new();
        let root = ws.path().to_path_buf();
        assert!(root.is_dir());
        drop(ws);
        assert!(!root.exists());
    }
}
