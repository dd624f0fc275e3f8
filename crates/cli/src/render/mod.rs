//! Rendering a run for people (text) and for scripts (json, stream-json).

pub mod json;
pub mod sanitize;
pub mod script;
pub mod stream_json;
pub mod text;
