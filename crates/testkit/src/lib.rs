//! Dev-only test tooling: a scripted fake model server speaking Anthropic Messages and OpenAI
//! Chat Completions streaming (and the OpenAI Responses API, for the Codex comparison bench), routed per agent and recording every request, plus workspace
//! fixtures.
//!
//! ```no_run
//! use troupe_testkit::{FakeServer, Step};
//! let server = FakeServer::start();
//! server.script("lead", [Step::tool("bash", serde_json::json!({"command": "ls"})), Step::text("done")]);
//! // point the client at server.url() (Anthropic) or server.openai_url() (OpenAI) …
//! assert_eq!(server.remaining("lead"), 2);
//! ```
//!
//! Must not be a dependency of anything but tests and benches; it knows no troupe crate beyond
//! `troupe_protocol` (it plays the model's and the servers' side of the wire).

mod answer;
mod anthropic;
pub mod cache;
pub mod contract;
pub mod fixtures;
pub mod llama;
pub mod mcp;
pub mod nats;
mod openai;
pub mod python;
mod quirks;
mod recorded;
mod render;
pub mod require;
mod responses;
mod script;
mod server;
pub mod try_it;
pub mod wait;

pub use cache::CacheUse;
pub use fixtures::TempWorkspace;
pub use quirks::{OpenAiQuirks, StreamUsage, ToolStreaming};
pub use recorded::Recorded;
pub use require::requirement;
pub use script::{Fault, Reply, ReplyBlock, Step, StopReason, Wire};
pub use server::{FakeServer, AGENT_HEADER, AGENT_HEADER_VAR, DEFAULT_AGENT};
pub use wait::{
    block_on, eventually, eventually_async, wait_for, wait_for_async, wait_until, wait_until_async,
};
