//! The team runtime: persistent named teammates running the agent loop, durable mail between
//! them, lifecycle in the roster and event log, wake-on-message, and the settle rule.
//!
//! Must not know: a store backend (it holds an `Arc<dyn TeamStore>`), provider wire formats or
//! the terminal. Agents are built through the agent crate's builder.

pub mod board;
pub mod error;
pub mod extension;
pub mod inbox;
pub mod launch;
pub mod liveness;
pub mod member;
mod member_front;
pub mod notice;
mod process;
pub mod profile;
pub mod prompt;
pub mod protocols;
pub mod render;
pub mod restate;
pub mod runtime;
pub mod settle;
pub mod shared;
pub mod spec;
pub mod store_writer;
pub mod task_hooks;
pub mod tools;
pub mod transcript_cache;
pub mod wake;
pub mod worktree;

#[cfg(test)]
mod lifecycle_tests;

pub use error::{MemberError, TeamError};
pub use extension::{LeadExtension, TeammateExtension};
pub use notice::{Notice, NoticeSink};
pub use runtime::Team;
pub use settle::SettleState;
pub use spec::{Isolation, MemberSpec, SpawnRequest, TeamConfig, TeammateMode, LEAD};

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    #[test]
    fn tool_schemas_are_current() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tool_schemas.rs");
        let checked = troupe_tools::schema::check(super::tool_schemas::ALL, &file, "troupe-team");
        assert_eq!(checked, Ok(()));
    }
}
