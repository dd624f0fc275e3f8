//! Subcommands: `troupe team …`, `troupe task …`, `troupe worktree …`, `troupe teammate`,
//! `troupe sandbox check` and `troupe config`.

pub mod config;
pub mod sandbox;
pub mod task;
pub mod team;
pub mod teammate;
pub mod worktree;
