//! troupe's settings, typed: the keys troupe knows (`permissions`, `hooks`, `env`, `model`,
//! `mcpServers`, `sandbox`, teammate options), read from every settings file a Claude Code
//! project may carry and merged with Claude Code's precedence. Every key and value Claude Code
//! accepts loads: what troupe does not honour, and keys nobody knows, are warnings (see
//! `check` and the table in `claude_keys`); only a file that is not JSON, or a key of the wrong
//! type, is an error naming the file and the line.
//!
//! Must not know: agents, teams or the CLI. It parses and merges; its callers decide what the
//! settings mean for them.

mod check;
pub mod claude_keys;
pub mod compatibility;
mod error;
mod hooks;
mod load;
mod merge;
mod pricing;
mod sandbox;

pub use check::{hook_warnings, nearest, runnable_hooks, Warning};
pub use error::SettingsError;
pub use load::{load, load_sources, settings_files, Layer, Loaded, Scope};
pub use pricing::ModelPrice;
pub use sandbox::{SandboxMode, SandboxNetwork, SandboxSettings};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The merged settings of one workspace, or the contents of one settings file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Permission rules and the default mode.
    pub permissions: Permissions,
    /// Hook commands by event name (`PreToolUse`, `Stop`, …), in Claude Code's shape.
    pub hooks: BTreeMap<String, Vec<HookMatcher>>,
    /// Environment variables set for the session and every tool process.
    pub env: BTreeMap<String, String>,
    /// The model name, when no `--model` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// MCP servers by name; each entry is validated by the MCP client that starts it, so one
    /// bad entry does not keep the others (or the settings) from loading.
    #[serde(rename = "mcpServers")]
    pub mcp_servers: BTreeMap<String, Value>,
    /// Seconds one MCP tool call may take before it is cancelled (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_tool_timeout: Option<f64>,
    /// Seconds an MCP server may take to start and answer `initialize` (default 30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_startup_timeout: Option<f64>,
    /// Seconds after which a foreground bash command still running is moved to the background
    /// (the model gets a placeholder result and a notification when it ends); unset: never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bash_auto_background: Option<f64>,
    /// The OS sandbox under bash commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSettings>,
    /// Where spawned teammates run: `in-process` or `process`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teammate_mode: Option<String>,
    /// Who answers teammates' permission questions: `lead` or `user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teammate_permissions: Option<String>,
    /// Where teams keep their state: `file` (the default, `.troupe/teams/`) or a NATS server,
    /// `nats://host:4222` (see `--store`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Copies of every stream and bucket a NATS team store keeps (1 to 5); unset:
    /// `min(3, servers in the cluster)`. The store URL's `?replicas=N` wins over it.
    #[serde(
        rename = "storeReplicas",
        alias = "store_replicas",
        skip_serializing_if = "Option::is_none"
    )]
    pub store_replicas: Option<usize>,
    /// Model calls one troupe process runs at once (the lead and its in-process teammates
    /// share them; the rest wait their turn). Default 16.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent_model_calls: Option<usize>,
    /// The model's context window in tokens, for a model troupe does not know (a local
    /// server); compaction works against it. `--context-window` wins over it.
    #[serde(
        rename = "contextWindow",
        alias = "context_window",
        skip_serializing_if = "Option::is_none"
    )]
    pub context_window: Option<u64>,
    /// Prices of models in USD per million tokens, by model name: they extend and override
    /// troupe's own price table (`{"my-model": {"input": 0.1, "output": 0.4}}`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pricing: BTreeMap<String, ModelPrice>,
    /// Prompt caching: `{"enabled": false}` turns it off (as `DISABLE_PROMPT_CACHING=1` does),
    /// `{"ttl": "1h"}` keeps entries an hour instead of five minutes.
    #[serde(rename = "promptCaching", skip_serializing_if = "Option::is_none")]
    pub prompt_caching: Option<PromptCaching>,
    /// Keys troupe does not know (Claude Code's own, a later version's): kept, never an error.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The `promptCaching` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptCaching {
    /// False turns caching off; on by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How long entries live: `5m` (default) or `1h`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// The `permissions` object: Claude Code rules and the mode that decides what no rule covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Permissions {
    /// Rules whose calls run without asking (`Bash(cargo test:*)`, `Edit(src/**)`).
    pub allow: Vec<String>,
    /// Rules whose calls are always asked about.
    pub ask: Vec<String>,
    /// Rules whose calls are always refused.
    pub deny: Vec<String>,
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk` or `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,
    /// Directories outside the workspace that tools may also use.
    pub additional_directories: Vec<String>,
    /// `"disable"`: bypassPermissions is refused, whoever asks for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_bypass_permissions_mode: Option<String>,
}

impl Permissions {
    /// Whether the settings forbid bypassPermissions (`disableBypassPermissionsMode: "disable"`).
    pub fn bypass_disabled(&self) -> bool {
        self.disable_bypass_permissions_mode.as_deref() == Some("disable")
    }
}

/// One entry of a hook event: which tools it matches and the commands to run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookMatcher {
    /// A tool-name pattern (`Bash|Edit`, `mcp__.*`); empty or absent matches everything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands to run when it matches.
    pub hooks: Vec<HookCommand>,
}

/// One hook, as Claude Code's settings give it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookCommand {
    /// The hook kind: `command` and `http` are the ones troupe runs (`prompt`, `agent` and
    /// `mcp_tool` are accepted and skipped with a warning).
    #[serde(rename = "type")]
    pub kind: String,
    /// The shell command (`command` hooks).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Seconds before the hook is abandoned (it then decides nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// A permission rule (`Bash(git commit:*)`) the tool call must match for the hook to run
    /// (tool events only).
    #[serde(rename = "if", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Runs once per session, then no more.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub once: bool,
    /// Runs in the background: the agent does not wait, and it decides nothing.
    #[serde(rename = "async", skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// Runs in the background; Claude Code wakes the model when it exits 2.
    #[serde(rename = "asyncRewake", skip_serializing_if = "std::ops::Not::not")]
    pub background_rewake: bool,
    /// The URL an `http` hook posts the event's JSON to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers of an `http` hook (`$VAR` expanded from `allowedEnvVars` only).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The environment variables an `http` hook's headers may name.
    #[serde(rename = "allowedEnvVars", skip_serializing_if = "Vec::is_empty")]
    pub allowed_env_vars: Vec<String>,
    /// Every other field (a `prompt` or `agent` hook's prompt and model, a `mcp_tool` hook's
    /// server and tool), kept so a file troupe cannot run yet still loads.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The permission modes troupe has, as settings name them in `defaultMode`.
pub const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
];

/// Teammate placements settings may give as `teammate_mode`.
pub const TEAMMATE_MODES: [&str; 2] = ["in-process", "process"];

/// The longest timeout a setting may give, in seconds (a day).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The smallest context window a setting may give, in tokens: below it not even the system
/// prompt and tool definitions fit.
pub const MIN_CONTEXT_WINDOW: u64 = 4_096;

/// Who may answer teammates' permission questions, as `teammate_permissions`.
pub const TEAMMATE_ANSWERERS: [&str; 2] = ["lead", "user"];

impl Settings {
    /// Parses one settings document; `origin` names it in errors (a path or `--settings`).
    pub fn parse(text: &str, origin: &str) -> Result<Settings, SettingsError> {
        Settings::parse_checked(text, origin).map(|(settings, _)| settings)
    }

    /// Parses one settings document and says what in it troupe does not do as written: keys
    /// it does not honour, keys nobody knows, values it leaves out.
    pub fn parse_checked(
        text: &str,
        origin: &str,
    ) -> Result<(Settings, Vec<Warning>), SettingsError> {
        let located = |err: serde_json::Error| SettingsError::Parse {
            origin: origin.to_string(),
            line: err.line(),
            column: err.column(),
            message: without_location(&err),
        };
        let mut document: Value = serde_json::from_str(text).map_err(located)?;
        let warnings = check::document(&mut document, origin);
        let settings: Settings = match serde_json::from_value(document) {
            Ok(settings) => settings,
            // The text's own error carries the line, when it is the same error.
            Err(err) => {
                return Err(match serde_json::from_str::<Settings>(text) {
                    Err(at) if without_location(&at) == err.to_string() => located(at),
                    _ => SettingsError::Invalid {
                        origin: origin.to_string(),
                        key: "settings".to_string(),
                        message: err.to_string(),
                    },
                })
            }
        };
        settings.validate(origin)?;
        hooks::validate(&settings.hooks, text, origin)?;
        Ok((settings, warnings))
    }

    /// Checks the values serde cannot: names that must be one of a few.
    fn validate(&self, origin: &str) -> Result<(), SettingsError> {
        let one_of = |key: &str, value: &Option<String>, allowed: &[&str]| match value {
            Some(v) if !allowed.contains(&v.as_str()) => Err(SettingsError::Invalid {
                origin: origin.to_string(),
                key: key.to_string(),
                message: format!("`{v}` is not one of {}", allowed.join(", ")),
            }),
            _ => Ok(()),
        };
        one_of(
            "permissions.defaultMode",
            &self.permissions.default_mode,
            &PERMISSION_MODES,
        )?;
        let mode = self.teammate_mode.as_ref().map(|m| m.replace('_', "-"));
        one_of("teammate_mode", &mode, &TEAMMATE_MODES)?;
        one_of(
            "teammate_permissions",
            &self.teammate_permissions,
            &TEAMMATE_ANSWERERS,
        )?;
        if let Some(store) = &self.store {
            if store != "file" && !store.starts_with("nats://") && !store.starts_with("tls://") {
                return Err(SettingsError::Invalid {
                    origin: origin.to_string(),
                    key: "store".to_string(),
                    message: format!("`{store}` is neither `file` nor a nats:// URL"),
                });
            }
        }
        if self.store_replicas.is_some_and(|n| !(1..=5).contains(&n)) {
            return Err(SettingsError::Invalid {
                origin: origin.to_string(),
                key: "storeReplicas".to_string(),
                message: "must be between 1 and 5 (JetStream's limit)".to_string(),
            });
        }
        if self.max_concurrent_model_calls == Some(0) {
            return Err(SettingsError::Invalid {
                origin: origin.to_string(),
                key: "max_concurrent_model_calls".to_string(),
                message: "must be at least 1 (calls would never run)".to_string(),
            });
        }
        for (key, value) in [
            ("mcp_tool_timeout", self.mcp_tool_timeout),
            ("mcp_startup_timeout", self.mcp_startup_timeout),
            ("bash_auto_background", self.bash_auto_background),
        ] {
            if value.is_some_and(|v| !(v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_SECS)) {
                return Err(SettingsError::Invalid {
                    origin: origin.to_string(),
                    key: key.to_string(),
                    message: format!(
                        "must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}"
                    ),
                });
            }
        }
        if let Some(window) = self.context_window.filter(|w| *w < MIN_CONTEXT_WINDOW) {
            return Err(SettingsError::Invalid {
                origin: origin.to_string(),
                key: "contextWindow".to_string(),
                message: format!(
                    "{window} tokens is too small: a context window is at least {MIN_CONTEXT_WINDOW} tokens"
                ),
            });
        }
        pricing::validate(&self.pricing, origin)?;
        for (event, matchers) in &self.hooks {
            for hook in matchers.iter().flat_map(|m| &m.hooks) {
                let missing = match hook.kind.as_str() {
                    "command" if hook.command.trim().is_empty() => Some("`command`"),
                    "http" if hook.url.as_deref().is_none_or(|u| u.trim().is_empty()) => {
                        Some("`url`")
                    }
                    // `prompt`, `agent`, `mcp_tool` and kinds of a newer Claude Code load; the
                    // hooks that troupe cannot run are skipped with a warning when compiled.
                    _ => None,
                };
                if let Some(field) = missing {
                    return Err(SettingsError::Invalid {
                        origin: origin.to_string(),
                        key: format!("hooks.{event}"),
                        message: format!("a {} hook needs a non-empty {field}", hook.kind),
                    });
                }
            }
        }
        Ok(())
    }
}

/// serde's message without the " at line L column C" it appends; the error shows those itself.
fn without_location(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&suffix) {
        Some(message) => message.to_string(),
        None => text,
    }
}
