//! The team tools: everyone's mail tools ([`mail`]), the lead's own ([`lead`]) and the task
//! board's ([`tasks`]).

pub mod lead;
pub mod mail;
pub mod task_changes;
pub mod tasks;

pub use lead::{lead_tools, Broadcast, ListTeammates, SpawnTeammate};
pub use mail::{ReadInbox, SendMessage};
pub use troupe_tools::summarize_input as summarize;
