//! The `hooks` settings, compiled once: per event, the entries with their matchers, and which
//! commands run for a given tool or occasion.

use crate::event::{HookEvent, MatchOn};
use crate::matcher::Matcher;
use std::collections::BTreeMap;
use std::time::Duration;
use troupe_settings::HookMatcher;

/// How long a hook may run when its settings give no `timeout` (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One hook troupe runs: a command, or an HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The shell command (`sh -c`); for an `http` hook, `POST <url>` (how runs name it).
    pub command: String,
    /// How long it may run before its process group is killed (or its request abandoned).
    pub timeout: Duration,
    /// Where an `http` hook posts the event (`None`: a command hook).
    pub http: Option<HttpTarget>,
    /// The permission rule a tool call must match for the hook to run (`if`).
    pub condition: Option<String>,
    /// Runs at most once per session (`once`).
    pub once: bool,
    /// Runs in the background and decides nothing (`async`, `asyncRewake`).
    pub background: bool,
    /// What a `prompt` (or `agent`) hook asks the model.
    pub prompt: Option<PromptTarget>,
    /// The MCP tool an `mcp_tool` hook calls.
    pub mcp: Option<McpTarget>,
}

/// A `prompt` hook's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTarget {
    /// The prompt, `$ARGUMENTS` standing for the event's JSON.
    pub prompt: String,
    /// The model to ask (`None`: the small, fast model).
    pub model: Option<String>,
}

/// An `mcp_tool` hook's tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTarget {
    /// The server's name.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
}

impl HookCommand {
    /// A command hook of `command` with `timeout`, nothing else set.
    pub fn command(command: impl Into<String>, timeout: Duration) -> HookCommand {
        HookCommand {
            command: command.into(),
            timeout,
            http: None,
            condition: None,
            once: false,
            background: false,
            prompt: None,
            mcp: None,
        }
    }
}

/// The endpoint of an `http` hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    /// The URL the event's JSON is posted to.
    pub url: String,
    /// Headers, `$VAR`/`${VAR}` expanded from the variables the hook allows.
    pub headers: Vec<(String, String)>,
}

/// A matcher and the commands it starts.
#[derive(Debug, Clone)]
struct Entry {
    matcher: Matcher,
    commands: Vec<HookCommand>,
}

/// A `hooks` setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("hooks.{event}[{index}].matcher {pattern:?} is not a regular expression: {source}")]
pub struct HookConfigError {
    /// The event's name.
    pub event: String,
    /// The entry's position in the event's list.
    pub index: usize,
    /// The matcher as written.
    pub pattern: String,
    /// Why it is not a regex.
    pub source: regex::Error,
}

/// Every hook of the effective settings, ready to be selected by event and tool.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    events: BTreeMap<HookEvent, Vec<Entry>>,
}

impl HookSet {
    /// Compiles the settings' `hooks`. Events troupe does not fire (a newer Claude Code's) are
    /// skipped with a warning, so such a settings file still works.
    pub fn from_settings(
        hooks: &BTreeMap<String, Vec<HookMatcher>>,
    ) -> Result<HookSet, HookConfigError> {
        let mut events: BTreeMap<HookEvent, Vec<Entry>> = BTreeMap::new();
        for (name, entries) in hooks {
            let Some(event) = HookEvent::parse(name) else {
                tracing::warn!(event = %name, "troupe does not fire this hook event; its hooks never run");
                continue;
            };
            for (index, entry) in entries.iter().enumerate() {
                let matcher =
                    Matcher::new(entry.matcher.as_deref()).map_err(|source| HookConfigError {
                        event: name.clone(),
                        index,
                        pattern: entry.matcher.clone().unwrap_or_default(),
                        source,
                    })?;
                let commands = entry
                    .hooks
                    .iter()
                    .filter_map(|hook| compile(name, hook))
                    .collect();
                events
                    .entry(event)
                    .or_default()
                    .push(Entry { matcher, commands });
            }
        }
        Ok(HookSet { events })
    }

    /// Whether no hook is configured at all.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Whether `event` has any hook.
    pub fn has(&self, event: HookEvent) -> bool {
        self.events.contains_key(&event)
    }

    /// The commands `event` runs for `subject` (a tool name or an occasion; ignored by events
    /// without matchers), each command once even when several entries name it.
    pub fn select(&self, event: HookEvent, subject: &str) -> Vec<&HookCommand> {
        let Some(entries) = self.events.get(&event) else {
            return Vec::new();
        };
        let mut chosen: Vec<&HookCommand> = Vec::new();
        for entry in entries {
            if !applies(event, &entry.matcher, subject) {
                continue;
            }
            for command in &entry.commands {
                if !chosen.iter().any(|c| c.command == command.command) {
                    chosen.push(command);
                }
            }
        }
        chosen
    }
}

/// The hook troupe runs for one settings entry, or `None` (with a warning) for a kind it does
/// not know.
fn compile(event: &str, hook: &troupe_settings::HookCommand) -> Option<HookCommand> {
    let timeout = hook.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let mut compiled = match hook.kind.as_str() {
        "command" => HookCommand::command(hook.command.clone(), timeout),
        "http" => {
            let url = hook.url.clone().unwrap_or_default();
            let expand = |value: &str| expand_allowed(value, &hook.allowed_env_vars);
            let headers = hook
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), expand(v)))
                .collect();
            HookCommand {
                http: Some(HttpTarget {
                    url: url.clone(),
                    headers,
                }),
                ..HookCommand::command(format!("POST {url}"), timeout)
            }
        }
        // An `agent` hook runs as a `prompt` hook: one model call, without tools.
        kind @ ("prompt" | "agent") => {
            let text = |key: &str| {
                hook.other
                    .get(key)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            let prompt = text("prompt").unwrap_or_default();
            let shown: String = prompt.chars().take(60).collect();
            HookCommand {
                prompt: Some(PromptTarget {
                    prompt,
                    model: text("model"),
                }),
                ..HookCommand::command(format!("{kind}: {shown}"), timeout)
            }
        }
        "mcp_tool" => {
            let text = |key: &str| {
                hook.other
                    .get(key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            let (server, tool) = (text("server"), text("tool"));
            HookCommand {
                mcp: Some(McpTarget {
                    server: server.clone(),
                    tool: tool.clone(),
                }),
                ..HookCommand::command(format!("mcp_tool {server}/{tool}"), timeout)
            }
        }
        other => {
            tracing::warn!(
                event,
                kind = other,
                "troupe cannot run this kind of hook yet; it is skipped"
            );
            return None;
        }
    };
    compiled.condition = hook.condition.clone().filter(|c| !c.trim().is_empty());
    compiled.once = hook.once;
    compiled.background = hook.background || hook.background_rewake;
    Some(compiled)
}

/// `value` with `$VAR` and `${VAR}` replaced by the variables `allowed` names (others, and
/// unset ones, become empty: a header cannot carry what the hook was not allowed).
fn expand_allowed(value: &str, allowed: &[String]) -> String {
    let lookup = |name: &str| match allowed.iter().any(|a| a == name) {
        true => troupe_tools::child_env::var(name).unwrap_or_default(),
        false => String::new(),
    };
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], &inner[end + 1..]),
                None => ("", after),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        match name.is_empty() {
            true => out.push('$'),
            false => out.push_str(&lookup(name)),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Whether an entry of `event` with `matcher` applies to `subject` (a tool name or an
/// occasion), as Claude Code reads matchers.
pub(crate) fn applies(event: HookEvent, matcher: &Matcher, subject: &str) -> bool {
    match event.match_on() {
        MatchOn::Tool => matcher.matches_tool(subject),
        MatchOn::Occasion => matcher.matches(subject),
        MatchOn::Nothing => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: &str) -> HookSet {
        let settings =
            troupe_settings::Settings::parse(json, "test").unwrap_or_else(|e| panic!("{e}"));
        HookSet::from_settings(&settings.hooks).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn selects_by_tool_in_either_spelling_once_per_command() {
        let hooks = set(r#"{"hooks": {"PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 5}]},
                {"matcher": "bash|Edit", "hooks": [{"type": "command", "command": "a"}, {"type": "command", "command": "b"}]},
                {"matcher": "Read", "hooks": [{"type": "command", "command": "c"}]}
            ], "Notification": [{"hooks": [{"type": "command", "command": "n"}]}]}}"#);
        let picked: Vec<&str> = hooks
            .select(HookEvent::PreToolUse, "bash")
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        assert_eq!(picked, ["a", "b"]);
        assert_eq!(
            hooks.select(HookEvent::PreToolUse, "bash")[0].timeout,
            Duration::from_secs(5)
        );
        assert_eq!(hooks.select(HookEvent::PreToolUse, "edit_file").len(), 2);
        assert!(hooks.select(HookEvent::PreToolUse, "glob").is_empty());
        assert!(hooks.select(HookEvent::PostToolUse, "bash").is_empty());
        assert!(!hooks.has(HookEvent::Stop));
    }

    #[test]
    fn every_claude_code_kind_and_field_compiles_and_unknown_kinds_are_skipped() {
        let hooks = set(r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "http", "url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer $TROUPE_HOOK_TEST_TOKEN", "X-Other": "$HOME"}, "allowedEnvVars": ["TROUPE_HOOK_TEST_TOKEN"]},
                {"type": "command", "command": "c", "if": "Bash(git commit:*)", "once": true, "async": true},
                {"type": "prompt", "prompt": "is it safe?", "model": "haiku"},
                {"type": "mcp_tool", "server": "s", "tool": "t"},
                {"type": "carrier-pigeon"}
            ]}]}}"#);
        let picked = hooks.select(HookEvent::PreToolUse, "bash");
        assert_eq!(picked.len(), 4);
        let prompt = picked[2].prompt.as_ref().unwrap();
        assert_eq!(
            (prompt.prompt.as_str(), prompt.model.as_deref()),
            ("is it safe?", Some("haiku"))
        );
        let mcp = picked[3].mcp.as_ref().unwrap();
        assert_eq!((mcp.server.as_str(), mcp.tool.as_str()), ("s", "t"));
        let http = picked[0].http.as_ref().unwrap();
        assert_eq!(http.url, "http://127.0.0.1:9/hook");
        // A variable the hook does not allow is never sent.
        assert!(http
            .headers
            .contains(&("X-Other".to_string(), String::new())));
        assert_eq!(picked[1].condition.as_deref(), Some("Bash(git commit:*)"));
        assert!(picked[1].once && picked[1].background);
    }

    #[test]
    fn events_without_matchers_run_every_hook_and_defaults_apply() {
        let hooks = set(
            r#"{"hooks": {"Stop": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "s"}]}],
                          "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "r"}]}]}}"#,
        );
        let stop = hooks.select(HookEvent::Stop, "");
        assert_eq!(stop.len(), 1);
        assert_eq!(stop[0].timeout, DEFAULT_TIMEOUT);
        assert_eq!(hooks.select(HookEvent::SessionStart, "resume").len(), 1);
        assert!(hooks.select(HookEvent::SessionStart, "startup").is_empty());
    }
}
