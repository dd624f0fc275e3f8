//! Subcommands: `troupe team …`, `troupe teammate` and `troupe sandbox check`.

pub mod sandbox;
pub mod team;
pub mod teammate;
