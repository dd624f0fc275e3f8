//! What a teammate process is started with: its whole configuration, serialised as one JSON
//! document and handed to it on its standard input. The team decides what belongs to the team
//! (who the member is, the lease it inherits) and writes what the run's recipe resolved (its
//! model and provider, reasoning, output limit, the whole permission policy); the program
//! that runs the team adds what its own processes need to set themselves up as the lead was
//! ([`crate::TeamConfig::process_options`], opaque here). The team never speaks the binary's
//! flags: the one it gives the child is the program's choice too ([`CONFIG_FROM_STDIN`]).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The arguments after the binary that make it read a [`ProcessLaunch`] from its stdin.
pub const CONFIG_FROM_STDIN: [&str; 3] = ["teammate", "--config-file", "-"];

/// The version of [`ProcessLaunch`] this build writes and reads.
pub const VERSION: u32 = 1;

/// A teammate process's configuration, as the lead resolved it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessLaunch {
    /// [`VERSION`]: a process of another build refuses a document it does not know.
    pub version: u32,
    /// The team to join.
    pub team: String,
    /// The member's name.
    pub name: String,
    /// Its role.
    pub role: String,
    /// Its first instructions (`None`: it continues from its transcript).
    pub prompt: Option<String>,
    /// The team's workspace root.
    pub workspace: PathBuf,
    /// The model it calls.
    pub model: String,
    /// The model's provider.
    pub provider: String,
    /// Extended thinking and effort, as the lead resolved them (`--thinking`, `--effort`,
    /// `--max-thinking-tokens`, the environment).
    #[serde(default)]
    pub reasoning: troupe_model::Reasoning,
    /// Output token limit per call.
    pub max_tokens: u32,
    /// The team's permission mode.
    pub permission_mode: String,
    /// The team's rules, each exactly as written: a deny rule that held only in the lead's own
    /// process would not be a rule.
    pub allow_rules: Vec<String>,
    /// Rules that make calls ask first.
    pub ask_rules: Vec<String>,
    /// Rules that refuse calls.
    pub deny_rules: Vec<String>,
    /// The lease the lead handed down ([`troupe_store::Lease::pass_to_child`]); without one
    /// (a launch written by hand) the teammate takes its lease itself.
    #[serde(default)]
    pub lease: Option<String>,
    /// What the program running the team adds for its processes (its own format).
    #[serde(default)]
    pub options: serde_json::Value,
    /// The credentials the lead holds in memory (provider keys, the store's password), by
    /// variable name: they reach the teammate on this document's pipe, never in its
    /// environment or arguments, where a tool call could read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<(String, String)>,
    /// The W3C trace context of the turn that spawned it, when telemetry traces it: its first
    /// turn continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl std::fmt::Debug for ProcessLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field but the secrets' values.
        let secrets: Vec<&str> = self.secrets.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProcessLaunch")
            .field("version", &self.version)
            .field("team", &self.team)
            .field("name", &self.name)
            .field("role", &self.role)
            .field("prompt", &self.prompt)
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("provider", &self.provider)
            .field("permission_mode", &self.permission_mode)
            .field("lease", &self.lease)
            .field("secrets", &secrets)
            .field("traceparent", &self.traceparent)
            .finish_non_exhaustive()
    }
}

impl ProcessLaunch {
    /// Reads a launch document; the error says what is wrong with it.
    pub fn from_json(text: &str) -> Result<ProcessLaunch, String> {
        let launch: ProcessLaunch =
            serde_json::from_str(text).map_err(|e| format!("not a teammate launch: {e}"))?;
        if launch.version != VERSION {
            return Err(format!(
                "a teammate launch of version {} (this troupe reads version {VERSION}): start the teammate with the same troupe as its lead",
                launch.version
            ));
        }
        Ok(launch)
    }
}
