//! `troupe team watch`: a live terminal dashboard of a team, on ratatui and crossterm.
//!
//! ```text
//! store (dyn TeamStore) ──watch_changes──> run loop ──read_patch / new_events──> App ──draw──> terminal
//!                      <──answer / send── (keys → Command)
//! ```
//!
//! [`App`] is pure state, changed only by store reads and key presses; [`ui::draw`] renders it
//! (the panes are in [`panes`]); [`run`] is the loop that ties them to a store and a terminal.
//! The dashboard reads the team only through the store trait and changes it only when the
//! person answers a request or sends a message.
//!
//! Must not know: the agent loop or a store backend: it reads a `dyn TeamStore` and draws.

pub mod app;
mod colours;
pub mod history;
mod keys;
pub mod model;
pub mod panes;
pub mod run;
pub mod source;
pub mod text;
mod transcript_view;
pub mod ui;

pub use app::{App, Command, Focus, Overlay, Target};
pub use model::{Pricing, TeamState};
pub use run::{run, Options, WatchError};
pub use ui::{draw, Colours};
