//! Subcommands: `troupe team …`, `troupe teammate`, `troupe sandbox check` and `troupe worktree …`.

pub mod sandbox;
pub mod team;
pub mod teammate;
pub mod worktree;
