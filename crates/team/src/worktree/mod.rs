//! Git worktrees (the course's s18): one isolated copy of the repository per task or teammate,
//! at `.troupe/worktrees/<name>` on branch `wt/<name>`, so parallel teammates never edit the
//! same files. [`Worktrees`] manages them (real git, an index under a lock, removal that never
//! loses work); [`bind`] points an agent's tools at the worktree it is bound to; [`exclude`] keeps
//! `.troupe/` out of the user's `git status`.

pub mod bind;
pub mod error;
pub mod exclude;
pub mod git;
pub mod index;
mod manage;
pub mod name;
pub mod prompt;
mod refusal;
pub mod table;
#[cfg(test)]
mod tests;

pub use error::{UnmergedWork, WorktreeError};
pub use exclude::ensure_troupe_excluded;
pub use index::{WorktreeRecord, WorktreeStatus};
pub use manage::{Listed, NewWorktree, Removal, Removed, WorkState, Worktrees};
pub use name::{branch_of, validate_name};
