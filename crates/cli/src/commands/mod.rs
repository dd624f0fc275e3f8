//! Subcommands: `troupe team …`, `troupe task …`, `troupe teammate` and `troupe sandbox check`.

pub mod sandbox;
pub mod task;
pub mod team;
pub mod teammate;
