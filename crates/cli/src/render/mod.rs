//! Rendering a run for people (text) and for scripts (json, stream-json).

pub mod json;
pub mod notice;
pub mod script;
pub mod stream_json;

// The terminal's sanitizing and event lines live with the terminal (`troupe-term`).
pub use troupe_term::{sanitize, text};
