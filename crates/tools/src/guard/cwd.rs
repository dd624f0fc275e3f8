//! bash's working directory between calls: a `cd` in one call holds for the next, as in Claude
//! Code, as long as it stays inside the workspace (its worktrees lie inside it) or a directory
//! added to it. Where a call ended is what its shell reported (`pwd -P`), never a reading of
//! the command.

use super::Workspace;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The directory the last call ended in, shared by the clones of one agent's workspace (a
/// subagent works in its parent's); `None` while that is the start.
#[derive(Debug, Clone, Default)]
pub(super) struct Cell(Arc<Mutex<Option<PathBuf>>>);

/// What recording a call's final directory did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CwdChange {
    /// The next call starts where this one was (the same folder, or another one inside).
    Kept,
    /// The call ended outside the workspace: the next one starts in this folder again.
    Reset(PathBuf),
}

impl Workspace {
    /// Where the next bash call starts: where the last one ended, while that folder exists and
    /// lies inside the workspace or an added directory; else [`Workspace::start_dir`].
    pub fn cwd(&self) -> PathBuf {
        let held = self
            .cwd
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match held {
            Some(dir) if dir.is_dir() && self.holds(&dir) => dir,
            _ => self.start_dir(),
        }
    }

    /// Records that a call ended in `dir` (its shell's `pwd -P`): the next starts there when it
    /// lies inside the workspace or an added directory, else back at the start.
    pub fn set_cwd(&self, dir: &Path) -> CwdChange {
        let real = dir.canonicalize().ok().filter(|d| self.holds(d));
        let mut held = self.cwd.0.lock().unwrap_or_else(PoisonError::into_inner);
        match real {
            Some(real) => {
                *held = (real != self.start_dir()).then_some(real);
                CwdChange::Kept
            }
            None => {
                *held = None;
                CwdChange::Reset(self.start_dir())
            }
        }
    }

    /// Whether the canonical `dir` lies inside the root or an added directory.
    fn holds(&self, dir: &Path) -> bool {
        dir.starts_with(&self.root) || self.added_dirs().any(|added| dir.starts_with(added))
    }
}
