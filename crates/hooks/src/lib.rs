//! Claude Code's hooks for troupe agents (`"hooks"` in the settings): which hooks match an
//! event, running them in parallel (a command `sh -c` in the project directory, each in its own
//! process group, killed at its timeout; an HTTP post; a `prompt` hook's model call through
//! [`HookModel`]; an `mcp_tool` hook's call through [`HookTools`]), and what their exit codes
//! and JSON answers decide.
//! [`HooksExtension`] installs them into an agent through the agent crate's
//! [`LifecycleHooks`](troupe_agent::LifecycleHooks) seam; every run is reported through a
//! [`HookReporter`] the caller supplies, and to `tracing`. Hook callbacks of a controlling
//! process (the Agent SDK's) match and decide the same way ([`Callbacks`]). Nothing here knows
//! about teams.
//!
//! Must not know: the agent loop's internals, teams or the CLI. It plugs in through the agent
//! crate's lifecycle seam only.

mod callback;
mod condition;
mod config;
mod decide;
mod ending;
mod env_file;
mod event;
mod extension;
mod http;
mod matcher;
mod mcp_hook;
mod output;
mod prompt_hook;
mod report;
mod run;
mod runner;
mod services;

pub use callback::{Callback, CallbackTransport, Callbacks};
pub use config::{
    HookCommand, HookConfigError, HookSet, HttpTarget, McpTarget, PromptTarget, DEFAULT_TIMEOUT,
};
pub use event::{HookEvent, MatchOn};
pub use extension::HooksExtension;
pub use matcher::{claude_name, Matcher};
pub use output::{HookOutput, Specific, Stdout};
pub use report::{HookReport, HookReporter};
pub use run::{run_hook, Ending, HookRun};
pub use runner::{Hooks, Occasion};
pub use services::{HookModel, HookTools};
