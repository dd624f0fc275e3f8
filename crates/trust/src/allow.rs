//! The trust allow-list: what a folder's project and local settings may set without the
//! person's trust. Everything else — every key not named here, a later troupe's typed settings
//! included — needs trust: it is listed, hashed, and taken out when the folder is not trusted.
//!
//! Both functions take [`Settings`] apart field by field without `..`, so a setting added to
//! the struct does not compile until it is decided here.
//!
//! May be set without trust, and why:
//! - `permissions.ask`, `permissions.deny`: they only ask or refuse more.
//! - `permissions.allow` rules that narrow ([`super::rules::loosening_allow`] says which do not:
//!   a whole tool, a control-plane path, a path outside the workspace).
//! - `permissions.defaultMode` `default` or `plan`: they ask no less than troupe's default.
//! - `permissions.disableBypassPermissionsMode`: it only refuses a mode.
//! - `model`, `contextWindow`, `pricing`, `promptCaching`: which model answers and how its
//!   tokens are counted, cached and priced; the endpoint and keys come from `env`, which needs
//!   trust.
//! - `mcp_tool_timeout`, `mcp_startup_timeout`: timeouts of servers that themselves need trust.
//! - `bash_auto_background`, `max_concurrent_model_calls`, `teammate_mode`: when a command is
//!   moved to the background, how many model calls run at once, whether a teammate is a thread
//!   or a process; none changes what runs or what is allowed.
//! - `teammate_permissions` `user`: the person answers teammates' questions (headless: nobody
//!   does, so they are refused). `lead` hands them to the model and needs trust.
//! - the keys of [`SAFE_KEYS`] among those troupe does not parse.
//!
//! Needs trust, notably: hooks, MCP servers, `statusLine`, `env`, `store` (a folder's
//! `nats://` server would receive the team's traffic) and `storeReplicas`, `sandbox` in any
//! form (it replaces the user's whole `sandbox` object, `network: deny` and `writableRoots`
//! included), `permissions.additionalDirectories`, `apiKeyHelper` and every unknown key.

use super::definitions::Kind;
use super::rules::{loosening_allow, loosening_mode, ControlPlane};
use serde_json::Value;
use troupe_settings::{Permissions, SandboxMode, SandboxNetwork, SandboxSettings, Settings};

/// Keys of the unparsed part (`other`) a folder may set without trust: Claude Code's
/// presentation settings (`$schema`, `includeCoAuthoredBy`, `cleanupPeriodDays`, `language`,
/// `outputStyle`, `alwaysThinkingEnabled`, `spinnerTipsEnabled`, `editorMode`, `fileCheckpointingEnabled`), and `requireTrust` and
/// `commandEnv`, which troupe honours from the user's own settings and `--settings` only.
pub const SAFE_KEYS: [&str; 11] = [
    "$schema",
    "includeCoAuthoredBy",
    "cleanupPeriodDays",
    "language",
    "outputStyle",
    "alwaysThinkingEnabled",
    "spinnerTipsEnabled",
    "editorMode",
    "fileCheckpointingEnabled",
    "requireTrust",
    "commandEnv",
];

/// What `settings` (one project or local layer) sets that needs trust, one `add` per line.
pub fn review(
    settings: &Settings,
    plane: &ControlPlane,
    strict_mcp: bool,
    add: &mut dyn FnMut(Kind, String),
) {
    let Settings {
        permissions,
        hooks,
        env,
        model: _,
        mcp_servers,
        mcp_tool_timeout: _,
        mcp_startup_timeout: _,
        bash_auto_background: _,
        sandbox,
        teammate_mode: _,
        teammate_permissions,
        store,
        store_replicas,
        max_concurrent_model_calls: _,
        context_window: _,
        pricing: _,
        prompt_caching: _,
        other,
    } = settings;
    for (event, matchers) in hooks {
        for matcher in matchers {
            let when = match matcher.matcher.as_deref() {
                Some(m) if !m.is_empty() && m != "*" => format!("{event} ({m})"),
                _ => event.clone(),
            };
            for hook in &matcher.hooks {
                add(Kind::Hook, format!("{when} hook: {}", hook.command));
            }
        }
    }
    if !strict_mcp {
        for (name, entry) in mcp_servers {
            add(
                Kind::Server,
                format!("MCP server `{name}`: {}", super::definitions::server(entry)),
            );
        }
    }
    for (key, value) in env {
        add(Kind::Env, format!("env {key}={value}"));
    }
    review_permissions(permissions, plane, add);
    if let Some(sandbox) = sandbox {
        review_sandbox(sandbox, add);
    }
    if let Some(answerer) = teammate_permissions.as_deref().filter(|a| *a != "user") {
        add(Kind::Setting, format!("teammate_permissions: {answerer}"));
    }
    if let Some(store) = store {
        add(Kind::Setting, format!("store: {store}"));
    }
    if let Some(replicas) = store_replicas {
        add(Kind::Setting, format!("storeReplicas: {replicas}"));
    }
    for (key, value) in other {
        if key == "statusLine" {
            let command = value
                .get("command")
                .and_then(|c| c.as_str())
                .map_or_else(|| value.to_string(), str::to_string);
            add(Kind::StatusLine, format!("statusLine: {command}"));
        } else if !SAFE_KEYS.contains(&key.as_str()) {
            add(Kind::Setting, format!("{key}: {}", shown(value)));
        }
    }
}

fn review_permissions(
    permissions: &Permissions,
    plane: &ControlPlane,
    add: &mut dyn FnMut(Kind, String),
) {
    let Permissions {
        allow,
        ask: _,
        deny: _,
        default_mode,
        additional_directories,
        disable_bypass_permissions_mode: _,
    } = permissions;
    if let Some(mode) = default_mode.as_deref().filter(|m| loosening_mode(m)) {
        add(Kind::Loosening, format!("permissions.defaultMode: {mode}"));
    }
    for rule in allow.iter().filter(|r| loosening_allow(r, plane)) {
        add(Kind::Loosening, format!("permissions.allow: {rule}"));
    }
    for dir in additional_directories {
        add(
            Kind::Loosening,
            format!("permissions.additionalDirectories: {dir}"),
        );
    }
}

fn review_sandbox(sandbox: &SandboxSettings, add: &mut dyn FnMut(Kind, String)) {
    let SandboxSettings {
        mode,
        writable_roots,
        network,
        excluded_commands,
    } = sandbox;
    let mode = match mode {
        SandboxMode::Off => "off",
        SandboxMode::Auto => "auto",
    };
    add(Kind::Loosening, format!("sandbox: {mode}"));
    for root in writable_roots {
        add(
            Kind::Loosening,
            format!("sandbox.writableRoots: {}", root.display()),
        );
    }
    match network {
        SandboxNetwork::Deny => add(Kind::Loosening, "sandbox.network: deny".to_string()),
        SandboxNetwork::Allow => add(Kind::Loosening, "sandbox.network: allow".to_string()),
        SandboxNetwork::Inet => {}
    }
    for command in excluded_commands {
        add(
            Kind::Loosening,
            format!("sandbox.excludedCommands: {command}"),
        );
    }
}

/// The part of `settings` that applies without trust (the other side of [`review`]).
pub fn keep(settings: &Settings, plane: &ControlPlane) -> Settings {
    let Settings {
        permissions:
            Permissions {
                allow,
                ask,
                deny,
                default_mode,
                additional_directories: _,
                disable_bypass_permissions_mode,
            },
        hooks: _,
        env: _,
        model,
        mcp_servers: _,
        mcp_tool_timeout,
        mcp_startup_timeout,
        bash_auto_background,
        sandbox: _,
        teammate_mode,
        teammate_permissions,
        store: _,
        store_replicas: _,
        max_concurrent_model_calls,
        context_window,
        pricing,
        prompt_caching,
        other,
    } = settings;
    Settings {
        permissions: Permissions {
            allow: allow
                .iter()
                .filter(|r| !loosening_allow(r, plane))
                .cloned()
                .collect(),
            ask: ask.clone(),
            deny: deny.clone(),
            default_mode: default_mode.clone().filter(|m| !loosening_mode(m)),
            additional_directories: Vec::new(),
            disable_bypass_permissions_mode: disable_bypass_permissions_mode.clone(),
        },
        model: model.clone(),
        mcp_tool_timeout: *mcp_tool_timeout,
        mcp_startup_timeout: *mcp_startup_timeout,
        bash_auto_background: *bash_auto_background,
        teammate_mode: teammate_mode.clone(),
        teammate_permissions: teammate_permissions.clone().filter(|a| a == "user"),
        max_concurrent_model_calls: *max_concurrent_model_calls,
        context_window: *context_window,
        pricing: pricing.clone(),
        prompt_caching: prompt_caching.clone(),
        other: other
            .iter()
            .filter(|(k, _)| SAFE_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        hooks: Default::default(),
        env: Default::default(),
        mcp_servers: Default::default(),
        sandbox: None,
        store: None,
        store_replicas: None,
    }
}

/// A value on one line: a string as it is (unless it holds control characters), else JSON.
fn shown(value: &Value) -> String {
    match value.as_str() {
        Some(text) if !text.chars().any(char::is_control) => text.to_string(),
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(settings: &Settings) -> Vec<(Kind, String)> {
        let mut items = Vec::new();
        review(settings, &ControlPlane::default(), false, &mut |k, t| {
            items.push((k, t))
        });
        items
    }

    #[test]
    fn stripping_keeps_what_the_allow_list_names_and_drops_the_rest() {
        let mut settings = Settings::parse(
            r#"{"permissions": {"allow": ["Bash", "Bash(cargo test:*)", "Edit(.git/config)"],
                "deny": ["Read(./secrets/**)"], "ask": ["Bash(git push:*)"],
                "defaultMode": "bypassPermissions", "additionalDirectories": ["/tmp"]},
                "sandbox": {"mode": "auto", "network": "deny"}, "env": {"X": "1"}, "model": "m",
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
                "statusLine": {"type": "command", "command": "echo hi"},
                "store": "nats://example.com:4222", "storeReplicas": 1,
                "teammate_permissions": "lead", "apiKeyHelper": "./key.sh",
                "enableAllProjectMcpServers": true, "includeCoAuthoredBy": false,
                "outputStyle": "Explanatory", "contextWindow": 50000, "teammate_mode": "process",
                "pricing": {"m": {"input": 1, "output": 2}}}"#,
            "t",
        )
        .unwrap();
        let texts: Vec<String> = listed(&settings).into_iter().map(|(_, t)| t).collect();
        for expected in [
            "Stop hook: true",
            "env X=1",
            "permissions.defaultMode: bypassPermissions",
            "permissions.allow: Bash",
            "permissions.allow: Edit(.git/config)",
            "permissions.additionalDirectories: /tmp",
            "sandbox: auto",
            "sandbox.network: deny",
            "teammate_permissions: lead",
            "store: nats://example.com:4222",
            "storeReplicas: 1",
            "statusLine: echo hi",
            "apiKeyHelper: ./key.sh",
            "enableAllProjectMcpServers: true",
        ] {
            assert!(texts.iter().any(|t| t == expected), "{expected}: {texts:?}");
        }
        assert_eq!(texts.len(), 14, "{texts:?}");
        settings = keep(&settings, &ControlPlane::default());
        assert!(listed(&settings).is_empty(), "{:?}", listed(&settings));
        assert_eq!(settings.permissions.allow, ["Bash(cargo test:*)"]);
        assert_eq!(settings.permissions.deny, ["Read(./secrets/**)"]);
        assert_eq!(settings.permissions.ask, ["Bash(git push:*)"]);
        assert_eq!(settings.model.as_deref(), Some("m"));
        assert_eq!(settings.context_window, Some(50000));
        assert_eq!(settings.teammate_mode.as_deref(), Some("process"));
        assert_eq!(settings.pricing.len(), 1);
        assert!(settings.store.is_none() && settings.sandbox.is_none());
        let kept: Vec<&str> = settings.other.keys().map(String::as_str).collect();
        assert_eq!(kept, ["includeCoAuthoredBy", "outputStyle"]);
    }

    #[test]
    fn settings_that_only_ask_more_need_no_trust() {
        let settings = Settings::parse(
            r#"{"permissions": {"defaultMode": "plan", "deny": ["Bash"], "allow": ["Edit(src/**)"]},
                "teammate_permissions": "user", "model": "m", "promptCaching": {"enabled": false},
                "requireTrust": false, "$schema": "https://json.schemastore.org/claude-code-settings.json"}"#,
            "t",
        )
        .unwrap();
        assert!(listed(&settings).is_empty(), "{:?}", listed(&settings));
        assert_eq!(keep(&settings, &ControlPlane::default()), settings);
    }
}
