//! Subcommands: `troupe team …`, `troupe teammate`, `troupe sandbox check`, `troupe config` and
//! `troupe worktree …`.

pub mod config;
pub mod sandbox;
pub mod team;
pub mod teammate;
pub mod worktree;
