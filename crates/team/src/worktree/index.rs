//! The worktree index (`.troupe/worktrees/.index.json`): every worktree troupe made, with its
//! branch, base, binding and status. Changed only under `.troupe/worktrees/.index.lock` and
//! replaced atomically, so processes creating and removing worktrees at once never lose a record.

use super::error::WorktreeError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use troupe_durable::atomic::write_atomic;
use troupe_durable::lock::LockFile;
use troupe_protocol::TaskId;

/// Where a worktree stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeStatus {
    /// In place, in use or waiting to be merged and removed.
    Active,
    /// Marked to stay in place after its work is done.
    Kept,
    /// Removed (its directory and branch are gone); the record stays for the history.
    Removed,
}

impl WorktreeStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WorktreeStatus::Active => "active",
            WorktreeStatus::Kept => "kept",
            WorktreeStatus::Removed => "removed",
        }
    }

    /// True while the worktree is on disk.
    pub fn is_present(self) -> bool {
        matches!(self, WorktreeStatus::Active | WorktreeStatus::Kept)
    }
}

/// One worktree as the index records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeRecord {
    /// Its name: the directory under `.troupe/worktrees/` and the branch `wt/<name>`.
    pub name: String,
    /// Its root directory (absolute).
    pub path: PathBuf,
    /// The branch its work is on.
    pub branch: String,
    /// The branch it started from and is merged back into; `None` when it started from a
    /// commit that no branch named (its commits then count as merged once any branch has them).
    #[serde(default)]
    pub base: Option<String>,
    /// The commit it started from.
    pub base_commit: String,
    /// The team whose board and events it belongs to.
    pub team: String,
    /// The task it is bound to, if any.
    #[serde(default)]
    pub task: Option<TaskId>,
    /// The teammate whose own worktree it is, for its whole life (`isolation: "worktree"`).
    #[serde(default)]
    pub member: Option<String>,
    /// Where it stands.
    pub status: WorktreeStatus,
    /// Who made it (an agent, or `user:<name>`).
    pub created_by: String,
    /// When it was made, in ms since the Unix epoch.
    pub created_at: u64,
    /// When its record last changed, in ms since the Unix epoch.
    pub updated_at: u64,
}

/// The whole index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// Every worktree, in creation order.
    #[serde(default)]
    pub worktrees: Vec<WorktreeRecord>,
}

impl Index {
    /// The record of the worktree called `name` that is on disk (active or kept).
    pub fn present(&self, name: &str) -> Option<&WorktreeRecord> {
        self.worktrees
            .iter()
            .rev()
            .find(|w| w.name == name && w.status.is_present())
    }

    /// The newest record called `name`, for changing it.
    pub fn latest_mut(&mut self, name: &str) -> Option<&mut WorktreeRecord> {
        self.worktrees.iter_mut().rev().find(|w| w.name == name)
    }

    /// Adds a record, dropping older records of a removed worktree of the same name.
    pub fn insert(&mut self, record: WorktreeRecord) {
        self.worktrees.retain(|w| w.name != record.name);
        self.worktrees.push(record);
    }

    /// "a (active), b (kept)" or "none", for errors.
    pub fn known(&self) -> String {
        let names: Vec<String> = self
            .worktrees
            .iter()
            .filter(|w| w.status.is_present())
            .map(|w| format!("{} ({})", w.name, w.status.as_str()))
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    }
}

/// The directory holding worktrees and the index.
pub fn worktrees_dir(troupe_dir: &Path) -> PathBuf {
    troupe_dir.join("worktrees")
}

fn index_path(troupe_dir: &Path) -> PathBuf {
    worktrees_dir(troupe_dir).join(".index.json")
}

fn index_err(path: &Path, detail: impl ToString) -> WorktreeError {
    WorktreeError::Index {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// Reads the index (empty when none was written yet); no lock is needed to read a whole file
/// that is only ever replaced by rename.
pub fn read(troupe_dir: &Path) -> Result<Index, WorktreeError> {
    let path = index_path(troupe_dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            index_err(
                &path,
                format!("corrupt ({e}); fix it by hand or move it aside"),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
        Err(e) => Err(index_err(&path, e)),
    }
}

/// The index held under its lock: read, change, [`Locked::save`]; dropping it unlocks.
pub struct Locked {
    _lock: LockFile,
    troupe_dir: PathBuf,
    /// The index as read under the lock.
    pub index: Index,
}

impl Locked {
    /// Takes the lock (waiting for other writers) and reads the index.
    pub fn open(troupe_dir: &Path) -> Result<Locked, WorktreeError> {
        let dir = worktrees_dir(troupe_dir);
        std::fs::create_dir_all(&dir).map_err(|e| index_err(&dir, e))?;
        let lock = LockFile::acquire(&dir.join(".index.lock"))?;
        let index = read(troupe_dir)?;
        Ok(Locked {
            _lock: lock,
            troupe_dir: troupe_dir.to_path_buf(),
            index,
        })
    }

    /// Writes the index back atomically (temp file, fsync, rename).
    pub fn save(&self) -> Result<(), WorktreeError> {
        let path = index_path(&self.troupe_dir);
        let bytes = serde_json::to_vec_pretty(&self.index).map_err(|e| index_err(&path, e))?;
        write_atomic(&path, &bytes)?;
        Ok(())
    }
}
