//! The team tools: everyone's mail tools ([`mail`]) and the lead's own ([`lead`]).

pub mod lead;
pub mod mail;

pub use lead::{lead_tools, Broadcast, ListTeammates, SpawnTeammate};
pub use mail::{ReadInbox, SendMessage};
pub use troupe_tools::summarize_input as summarize;
