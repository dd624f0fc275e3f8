//! The REPL's terminal: a line editor of troupe's own ([`editor`]) that owns the prompt and
//! prints everything else above it, the history file it shares with earlier versions, and the
//! plain line reader used when stdin is not a terminal; the lines it prints for an agent's
//! events ([`text`], [`view`], [`markdown`]), and the sanitizing every line for a terminal
//! goes through ([`sanitize`]).
//!
//! Must not know: teams, the store's backends, MCP or the session driver: the front ends hand
//! it lines and events.

pub mod clipboard;
pub mod complete;
pub mod editor;
mod footer;
mod highlight;
pub mod history_file;
pub mod image_paste;
pub mod line;
pub mod mail;
pub mod markdown;
pub mod mention;
pub mod menu;
pub mod mode;
pub mod paste;
pub mod raw;
pub mod reader;
pub mod sanitize;
pub mod search;
pub mod text;
pub mod view;
pub mod vim;

pub use reader::{Interrupts, LineReader, Printer};

/// What the person did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Entered a line.
    Line(String),
    /// Pressed Ctrl-C at an empty prompt (or in answer to a question).
    Interrupted,
    /// Pressed Ctrl-D at an empty prompt (or stdin ended).
    Eof,
}
