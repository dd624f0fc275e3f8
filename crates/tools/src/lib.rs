//! The [`Tool`] trait, the [`Registry`], the workspace path guard and troupe's built-in tools.
//!
//! Must not know: agents, permissions policy, teams or the model. A tool says what a call would
//! do ([`Effect`], [`Tool::reads_only`]); whether it may run is the agent loop's decision.

pub mod background;
pub mod bash;
mod beneath;
pub mod child_env;
pub mod conceal;
pub mod edit_file;
pub mod git_env;
pub mod glob;
pub mod grep;
pub mod guard;
pub mod image_file;
pub mod image_fit;
pub mod notebook;
pub mod notebook_edit;
pub mod output;
pub mod process;
pub mod read_file;
pub mod registry;
pub mod sandbox;
pub mod schema;
pub mod secrets;
pub mod shell;
pub mod summary;
mod web_cache;
pub mod web_client;
pub mod web_fetch;
pub mod web_search;
pub mod write_file;

pub use bash::{is_read_only_command, BashTool};
pub use beneath::{Parents, Previous};
pub use conceal::Concealed;
pub use edit_file::EditFileTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use guard::{CwdChange, GuardError, Workspace};
pub use notebook_edit::NotebookEditTool;
pub use output::{truncate_middle, DEFAULT_OUTPUT_BUDGET};
pub use read_file::ReadFileTool;
pub use registry::Registry;
pub use sandbox::{Sandbox, SandboxConfig, SandboxMode};
pub use schema::schema_of;
pub use summary::summarize_input;
pub use web_fetch::{Summarizer, WebFetchTool};
pub use web_search::WebSearchTool;
pub use write_file::WriteFileTool;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
pub use troupe_protocol::ImageData;

/// What a tool call does to the world; permissions and the plan gate decide on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (read_file, glob, grep, a read-only bash command, team queries).
    ReadOnly,
    /// Changes files in the workspace (write_file, edit_file, notebook_edit).
    Edit,
    /// Runs arbitrary commands (bash that is not known to be read-only).
    Execute,
    /// Coordination with the team (messages, protocol answers); never gated by file permissions.
    Coordinate,
}

/// What a tool hands back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// True when the call failed; the model should act on the message.
    pub is_error: bool,
    /// Images beside the text (an MCP server's); providers that take none get a note instead.
    pub images: Vec<ImageData>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed result, phrased so the model can act on it.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }

    /// The same result with these images attached.
    pub fn with_images(mut self, images: Vec<ImageData>) -> Self {
        self.images = images;
        self
    }
}

/// Per-call context handed to every tool.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace every path must stay inside.
    pub workspace: Arc<Workspace>,
    /// Name of the agent making the call.
    pub agent: String,
    /// How this call's processes are confined; the loop sets it per call from why the call was
    /// allowed.
    pub sandbox: Sandbox,
    /// The run's sandbox settings (mode, writable roots).
    pub sandbox_config: Arc<SandboxConfig>,
    /// The agent's background commands (`bash` with `run_in_background`), when it may have any.
    pub background: Option<background::Jobs>,
    /// Where the call's output goes as it comes, when someone watches it run.
    pub progress: Option<Progress>,
    /// What glob and grep must not reveal (files a `Read` deny rule covers).
    pub concealed: Concealed,
    /// What answers web_fetch's prompt over a page (the run's small, fast model), when the run
    /// has one; without it web_fetch returns the page's Markdown.
    pub summarizer: Option<Arc<dyn Summarizer>>,
}

/// Receives a running call's output as it comes: the call's id and the bytes.
pub type ProgressSink = Arc<dyn Fn(&str, &[u8]) + Send + Sync>;

/// A running call's progress reporter (a person watching sees the last lines of a long
/// command). What the call returns is unaffected.
#[derive(Clone)]
pub struct Progress {
    call: Arc<str>,
    sink: ProgressSink,
}

impl Progress {
    /// Reports the output of call `call` to `sink`.
    pub fn new(call: &str, sink: ProgressSink) -> Progress {
        Progress {
            call: call.into(),
            sink,
        }
    }

    /// Reports output the call produced.
    pub fn output(&self, bytes: &[u8]) {
        (self.sink)(&self.call, bytes);
    }
}

impl ToolContext {
    /// A context for `agent` in `workspace` with default sandbox settings; calls run read-only
    /// until the loop says otherwise.
    pub fn new(workspace: Arc<Workspace>, agent: impl Into<String>) -> ToolContext {
        ToolContext {
            workspace,
            agent: agent.into(),
            sandbox: Sandbox::ReadOnly,
            sandbox_config: Arc::new(SandboxConfig::default()),
            background: None,
            progress: None,
            concealed: Concealed::default(),
            summarizer: None,
        }
    }

    /// The same context, with web_fetch's prompts answered by `summarizer`.
    pub fn with_summarizer(mut self, summarizer: Option<Arc<dyn Summarizer>>) -> ToolContext {
        self.summarizer = summarizer;
        self
    }

    /// The same context, with searches leaving out what `concealed` covers.
    pub fn with_concealed(mut self, concealed: Concealed) -> ToolContext {
        self.concealed = concealed;
        self
    }

    /// The same context with these background commands.
    pub fn with_background(mut self, jobs: background::Jobs) -> ToolContext {
        self.background = Some(jobs);
        self
    }

    /// The same context with these sandbox settings.
    pub fn with_sandbox_config(mut self, config: Arc<SandboxConfig>) -> ToolContext {
        self.sandbox_config = config;
        self
    }
}

/// A capability the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by (`bash`, `read_file`, …).
    fn name(&self) -> &str;
    /// What it does and when to use it, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the input object, generated from a Rust type.
    fn input_schema(&self) -> Value;
    /// The input schema as built-in JSON text, in the form the providers take, when the tool
    /// has one (a built-in tool: see [`schema`]); requests then carry it as it is. `None`
    /// (the default): [`Tool::input_schema`] is generated and cleaned when a request needs it.
    fn built_schema(&self) -> Option<&'static str> {
        None
    }
    /// What this particular call would do (bash inspects its command).
    fn effect(&self, input: &Value) -> Effect;
    /// Whether the call runs programs, which the OS sandbox must then confine. When it cannot
    /// (no Landlock), such a call is asked about or refused instead of run unconfined.
    fn runs_programs(&self) -> bool {
        false
    }
    /// Whether several calls of this tool in one response may run at the same time (the `task`
    /// subagent): the loop runs a run of such calls side by side, however many.
    fn concurrent(&self) -> bool {
        false
    }
    /// Whether this call only reads, so that the loop may run it side by side with the
    /// response's neighbouring calls that only read (read_file, grep, glob, a read-only bash
    /// command, an MCP tool its server marks `readOnlyHint`). A call that changes anything,
    /// even only the agent's own state (todo, compact), says no, as the default does.
    fn reads_only(&self, _input: &Value) -> bool {
        false
    }
    /// The question this call puts to the person, when it is one (a question for the user, a
    /// plan to approve): whatever the permission mode, it goes to whoever answers permission
    /// questions, and the answer comes back in the input's `answer_fields`.
    fn asks_person(&self, _input: &Value) -> Option<PersonQuestion> {
        None
    }
    /// Runs the call. Malformed input is an error output, never a panic.
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput;
}

/// A call that is a question to the person (see [`Tool::asks_person`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonQuestion {
    /// Why it is asked, shown with the question.
    pub reason: String,
    /// The error result when nobody can answer (a headless run).
    pub unanswered: String,
    /// The input fields only the answer may fill: removed from the model's input before asking.
    pub answer_fields: &'static [&'static str],
}

/// A shared, dynamically typed tool.
pub type DynTool = Arc<dyn Tool>;

/// Deserializes a tool's input, turning a malformed one into an error output naming the problem.
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input)
        .map_err(|err| ToolOutput::error(format!("Invalid input for {tool}: {err}")))
}

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    use super::tool_schemas;
    use crate::schema::Built;

    #[test]
    fn tool_schemas_are_current() {
        let all = [
            Built::new::<crate::background::JobInput>("JOB", tool_schemas::JOB),
            Built::new::<crate::bash::BashInput>("BASH", tool_schemas::BASH),
            Built::new::<crate::edit_file::EditFileInput>("EDIT_FILE", tool_schemas::EDIT_FILE),
            Built::new::<crate::glob::GlobInput>("GLOB", tool_schemas::GLOB),
            Built::new::<crate::grep::GrepInput>("GREP", tool_schemas::GREP),
            Built::new::<crate::notebook_edit::NotebookEditInput>(
                "NOTEBOOK_EDIT",
                tool_schemas::NOTEBOOK_EDIT,
            ),
            Built::new::<crate::read_file::ReadFileInput>("READ_FILE", tool_schemas::READ_FILE),
            Built::new::<crate::web_fetch::WebFetchInput>("WEB_FETCH", tool_schemas::WEB_FETCH),
            Built::new::<crate::web_search::WebSearchInput>("WEB_SEARCH", tool_schemas::WEB_SEARCH),
            Built::new::<crate::write_file::WriteFileInput>("WRITE_FILE", tool_schemas::WRITE_FILE),
        ];
        assert_eq!(
            crate::schema::check(&all, env!("CARGO_MANIFEST_DIR"), "troupe-tools"),
            Ok(())
        );
    }
}
