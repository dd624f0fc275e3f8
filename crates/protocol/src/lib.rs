//! Pure data shared by every troupe crate: the conversation, team mail, protocol requests,
//! agent statuses and events. No I/O, no async.

pub mod chat;
pub mod usage;

pub use chat::{ChatMessage, ContentBlock, Role};
pub use usage::Usage;
