//! Subcommands: `troupe team …`, `troupe task …`, `troupe worktree …`, `troupe teammate`,
//! `troupe sandbox check`, `troupe config`, `troupe mcp …`, `troupe cron …`, `troupe sessions`
//! `troupe doctor`, `troupe trust` and `troupe plugin …`.

pub mod config;
pub mod cron;
pub mod doctor;
pub mod mcp;
pub mod mcp_edit;
pub mod model;
pub mod plugin;
pub mod sandbox;
pub mod sessions;
pub mod task;
pub mod team;
pub mod team_names;
pub mod team_status;
pub mod team_tail;
pub mod team_watch;
pub mod teammate;
pub mod teammate_launch;
pub mod teammate_start;
pub mod trust;
pub mod worktree;

/// The current-thread runtime a command waiting on the team's store runs on (`team watch`,
/// `team tail`, `team log --follow`).
pub(crate) fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
