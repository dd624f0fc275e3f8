//! Subcommands: `troupe team …`, `troupe task …`, `troupe worktree …`, `troupe teammate`,
//! `troupe sandbox check`, `troupe config`, `troupe mcp list` and `troupe cron …`.

pub mod config;
pub mod cron;
pub mod mcp;
pub mod sandbox;
pub mod task;
pub mod team;
pub mod team_status;
pub mod team_watch;
pub mod teammate;
pub mod worktree;
