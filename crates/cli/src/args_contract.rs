//! The flags of Claude Code's headless contract that the Claude Agent SDK and scripts pass
//! (`claude -p … --input-format stream-json --permission-prompt-tool stdio …`). Each does
//! what it does in Claude Code, or, where troupe has nothing it could apply to, is accepted
//! with a one-line note on stderr (see [`ContractArgs::notes`]) rather than refused.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// How a headless run reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum InputFormat {
    /// The prompt argument, or stdin's text.
    #[default]
    Text,
    /// User messages and control requests as JSON lines on stdin (the Agent SDK's protocol);
    /// the session lasts until stdin closes.
    StreamJson,
}

/// Claude Code's headless flags beyond the basic ones.
#[derive(Debug, Args, Clone, Default)]
pub struct ContractArgs {
    /// Input format for -p: text (the prompt) or stream-json (JSON lines on stdin, with
    /// control requests: the Claude Agent SDK's protocol).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,

    /// Replace the default identity part of the system prompt with this file's text.
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    pub system_prompt_file: Option<PathBuf>,

    /// Stream partial messages (`stream_event` lines) with --output-format stream-json.
    #[arg(long)]
    pub include_partial_messages: bool,

    /// Use this UUID as the new session's id.
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,

    /// With --resume or --continue: continue in a new session (a copy), leaving the old one.
    #[arg(long)]
    pub fork_session: bool,

    /// Where permission questions go in a headless run: `stdio` asks the controlling process
    /// with a `can_use_tool` control request (needs --input-format stream-json).
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,

    /// The tools every agent may be offered: a comma- or space-separated list (Claude Code's or
    /// troupe's names; the team's tools count), "" for none, or "default" for all. MCP tools stay.
    #[arg(long, value_name = "TOOLS")]
    pub tools: Option<String>,

    /// Skip every permission question (same as --permission-mode bypassPermissions); deny rules
    /// still apply and the sandbox still confines commands.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,

    /// Stop once the run's estimated cost passes this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// Log debug output to stderr (optionally only these targets, e.g. `troupe_model`).
    #[arg(
        short = 'd',
        long,
        value_name = "FILTER",
        num_args = 0..=1,
        default_missing_value = "debug"
    )]
    pub debug: Option<String>,

    /// Model to try the turn again on (-p) when the main one stays overloaded or failing
    /// after the retries.
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,

    /// A JSON Schema the final answer must follow (-p): the lead is told to answer with such a
    /// JSON value, which the result carries as `structured_output`.
    #[arg(long, value_name = "SCHEMA")]
    pub json_schema: Option<String>,

    /// Which settings files to read: a comma-separated list of user, project, local.
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,

    /// With --output-format stream-json: a `hook_started` and a `hook_response` line for every
    /// hook run.
    #[arg(long)]
    pub include_hook_events: bool,

    /// Beta headers (accepted; see the note it prints).
    #[arg(long, value_name = "BETAS", num_args = 1..)]
    pub betas: Vec<String>,

    /// Thinking budget in tokens (0: no thinking); see --thinking and --effort.
    #[arg(long, value_name = "TOKENS")]
    pub max_thinking_tokens: Option<u32>,
}

impl ContractArgs {
    /// One line each for the flags troupe accepts but cannot apply, for stderr.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.fallback_model.is_some() && self.input_format == InputFormat::StreamJson {
            notes.push(
                "--fallback-model applies to -p with a text prompt; with --input-format stream-json a failing model fails the turn".to_string(),
            );
        }
        if self.json_schema.is_some() && self.input_format == InputFormat::StreamJson {
            notes.push(
                "--json-schema applies to -p with a text prompt; with --input-format stream-json the answers are not validated".to_string(),
            );
        }
        if !self.betas.is_empty() {
            notes.push("--betas is accepted but no beta headers are sent".to_string());
        }
        notes
    }
}
