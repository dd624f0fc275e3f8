//! Subcommands: `troupe team …` and `troupe teammate`.

pub mod team;
pub mod teammate;
