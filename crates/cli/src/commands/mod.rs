//! Subcommands: `troupe team …`, `troupe teammate`, `troupe sandbox check` and `troupe config`.

pub mod config;
pub mod sandbox;
pub mod team;
pub mod teammate;
