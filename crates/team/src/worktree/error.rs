//! Why a worktree operation was refused or failed; every message says what to do instead.

use std::path::PathBuf;
use troupe_protocol::{TaskError, TaskId};
use troupe_store::StoreError;

/// What can go wrong managing worktrees.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The name breaks the naming rule.
    #[error("invalid worktree name {name:?}: {reason}")]
    BadName {
        /// The name given.
        name: String,
        /// The rule it breaks.
        reason: String,
    },
    /// git is not installed (or cannot be run).
    #[error(
        "cannot run git ({0}); worktrees need git installed (the task board works without it)"
    )]
    NoGit(String),
    /// The workspace is not inside a git repository.
    #[error(
        "{} is not inside a git repository, so there are no worktrees to make: run `git init` \
         and make a first commit to use them (the task board works without git)",
        workspace.display()
    )]
    NotARepo {
        /// The workspace.
        workspace: PathBuf,
    },
    /// The repository has no commit to start a worktree from.
    #[error("cannot start a worktree from {base}: {detail} (a new repository needs a first commit; name an existing branch or commit as the base)")]
    BadBase {
        /// The base asked for (`HEAD` when none was).
        base: String,
        /// What git said.
        detail: String,
    },
    /// A worktree with this name exists already.
    #[error("a worktree named '{name}' already exists ({status}, at {}); pick another name, or remove it first", path.display())]
    Exists {
        /// The name.
        name: String,
        /// Its status.
        status: &'static str,
        /// Where it is.
        path: PathBuf,
    },
    /// Something is already where the worktree would go.
    #[error("{} already exists and is not a worktree troupe knows; move it aside or pick another name", path.display())]
    PathTaken {
        /// The path.
        path: PathBuf,
    },
    /// No worktree with this name.
    #[error("no worktree named '{name}'; worktrees: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// The active and kept ones, or "none".
        known: String,
    },
    /// The task cannot take a worktree.
    #[error("cannot bind task {id} to a worktree: {reason}")]
    TaskUnbindable {
        /// The task.
        id: TaskId,
        /// Why.
        reason: String,
    },
    /// Removal would lose uncommitted changes.
    #[error(
        "worktree '{name}' has uncommitted changes, so it was not removed: {files}. Commit them \
         there (`git -C '{}' add -A && git -C '{}' commit`), keep the worktree with keep_worktree \
         (`troupe worktree keep {name}`), or throw them away with discard: true \
         (`troupe worktree remove {name} --discard`)",
        path.display(), path.display()
    )]
    Uncommitted {
        /// The worktree.
        name: String,
        /// Its directory.
        path: PathBuf,
        /// The changed files, as git lists them (shortened).
        files: String,
    },
    /// Removal would lose commits not reachable from the base.
    #[error("{0}")]
    Unmerged(Box<UnmergedWork>),
    /// The worktree is a live teammate's own.
    #[error("worktree '{name}' is teammate {member}'s own and {member} is {status}; shut {member} down first")]
    InUse {
        /// The worktree.
        name: String,
        /// The teammate.
        member: String,
        /// Its status.
        status: &'static str,
    },
    /// The worktree's task is in progress: its owner works in it.
    #[error("worktree '{name}' is bound to task {task}, which {owner} has in progress ({owner} is {status}); finish or release the task first (`troupe task update {task} --status pending`)")]
    TaskInProgress {
        /// The worktree.
        name: String,
        /// The task bound to it.
        task: u64,
        /// The task's owner.
        owner: String,
        /// The owner's status as the roster has it (`not on the roster` for a person).
        status: String,
    },
    /// The branch moved while the worktree was being removed; it was kept.
    #[error("branch {branch} moved while worktree '{name}' was being removed (new commits?); the directory is gone but the branch and its commits were kept — check them with `git log {branch}`")]
    BranchMoved {
        /// The worktree.
        name: String,
        /// Its branch.
        branch: String,
    },
    /// A git command failed.
    #[error("`git {command}` failed: {detail}")]
    Git {
        /// The command, without `git`.
        command: String,
        /// What git said.
        detail: String,
    },
    /// The worktree index could not be read or written.
    #[error("worktree index {}: {detail}", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// The team store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<troupe_durable::DurableError> for WorktreeError {
    fn from(e: troupe_durable::DurableError) -> WorktreeError {
        WorktreeError::Store(e.into())
    }
}

impl WorktreeError {
    /// A task refusal, as the reason a task cannot be bound.
    pub(crate) fn task(id: TaskId, err: &TaskError) -> WorktreeError {
        WorktreeError::TaskUnbindable {
            id,
            reason: err.to_string(),
        }
    }
}

/// Commits a worktree's branch holds that its base lacks: why a removal was refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "worktree '{name}' has {count} commit(s) on {branch} that {base} does not have, so it \
     was not removed: {commits}. Merge them: `{merge}`; or keep the worktree with \
     keep_worktree (`troupe worktree keep {name}`); or throw them away with discard: true \
     (`troupe worktree remove {name} --discard`)"
)]
pub struct UnmergedWork {
    /// The worktree.
    pub name: String,
    /// Its branch.
    pub branch: String,
    /// What was compared against ("main", or "another branch").
    pub base: String,
    /// How many commits.
    pub count: usize,
    /// The first few, one line each.
    pub commits: String,
    /// The git command that merges them.
    pub merge: String,
}
