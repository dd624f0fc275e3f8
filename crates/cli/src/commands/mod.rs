//! Subcommands: `troupe team …`, `troupe teammate`, `troupe sandbox check` and `troupe mcp list`.

pub mod mcp;
pub mod sandbox;
pub mod team;
pub mod teammate;
