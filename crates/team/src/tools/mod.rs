//! The team tools: everyone's mail tools ([`mail`]), the lead's own ([`lead`]), the task
//! board's ([`tasks`], [`task_changes`]) and everyone's worktree tools ([`worktrees`]).

pub mod lead;
pub mod mail;
pub mod task_changes;
pub mod tasks;
pub mod worktrees;

pub use lead::{lead_tools, Broadcast, ListTeammates, SpawnTeammate};
pub use mail::{ReadInbox, SendMessage};
pub use troupe_tools::summarize_input as summarize;
pub use worktrees::worktree_tools;
