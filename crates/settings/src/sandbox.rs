//! The `sandbox` key: `"auto"`, `"off"`, `{"mode": …, "writableRoots": […], "network": …}`,
//! or Claude Code's `{"enabled": …, …}`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// Whether bash commands run under the OS sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Sandbox where the kernel supports it; fail closed where it does not.
    #[default]
    Auto,
    /// Never sandbox: the read-only classification is trusted as is.
    Off,
}

/// Which sockets workspace-write commands may open (read-only commands never may).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Internet sockets only (TCP and UDP over IPv4 and IPv6; the default): no unix socket, so
    /// no way to the person's tmux, ssh agent or session bus.
    #[default]
    Inet,
    /// Every kind of socket, unix sockets included.
    Allow,
    /// `socket()` is refused for every kind of socket, as in the read-only sandbox.
    Deny,
}

/// The sandbox configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSettings {
    /// Whether to sandbox.
    pub mode: SandboxMode,
    /// Extra directories an explicitly allowed command may write to.
    pub writable_roots: Vec<PathBuf>,
    /// Whether workspace-write commands may open sockets.
    pub network: SandboxNetwork,
    /// Commands that run outside the sandbox when a rule or the person allowed them (Claude
    /// Code's `excludedCommands`: `docker`, `git push`, `npm:*`).
    pub excluded_commands: Vec<String>,
}

/// What the key accepts, for errors.
const SPELLINGS: &str = "`sandbox` must be \"auto\", \"off\", {\"mode\": \"auto\"|\"off\", \"writableRoots\": [\"/abs/dir\", …], \"network\": \"inet\"|\"allow\"|\"deny\"} or Claude Code's {\"enabled\": true|false, …}";

impl<'de> Deserialize<'de> for SandboxSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        of_value(&value).map_err(serde::de::Error::custom)
    }
}

/// troupe's spellings (`"off"`, `{"mode": …}`) and Claude Code's object: `enabled: false`
/// turns the sandbox off; a `network` object keeps troupe's default (a warning says so); the
/// rest of Claude Code's keys are warnings, not errors.
fn of_value(value: &Value) -> Result<SandboxSettings, String> {
    let wrong = |what: &str| format!("{what}: {SPELLINGS}");
    let map = match value {
        Value::String(_) => {
            let mode = SandboxMode::deserialize(value).map_err(|_| SPELLINGS.to_string())?;
            return Ok(SandboxSettings {
                mode,
                ..SandboxSettings::default()
            });
        }
        Value::Object(map) => map,
        _ => return Err(SPELLINGS.to_string()),
    };
    let mode = match (map.get("mode"), map.get("enabled")) {
        (Some(mode), _) => {
            SandboxMode::deserialize(mode).map_err(|_| wrong("unknown `sandbox.mode`"))?
        }
        (None, Some(Value::Bool(false))) => SandboxMode::Off,
        (None, Some(Value::Bool(true)) | None) => SandboxMode::Auto,
        (None, Some(_)) => return Err(wrong("`sandbox.enabled` is not true or false")),
    };
    let writable_roots = match map.get("writableRoots") {
        None => Vec::new(),
        Some(roots) => Vec::<PathBuf>::deserialize(roots)
            .map_err(|_| wrong("`sandbox.writableRoots` is not a list of paths"))?,
    };
    if let Some(relative) = writable_roots.iter().find(|p| !p.is_absolute()) {
        return Err(format!(
            "sandbox.writableRoots entry `{}` is not an absolute path",
            relative.display()
        ));
    }
    let network = match map.get("network") {
        None => SandboxNetwork::Inet,
        // Claude Code's object: unix sockets it names (or all of them) need every socket kind,
        // since the filter cannot tell one socket path from another.
        Some(Value::Object(object)) => {
            let named = object
                .get("allowUnixSockets")
                .and_then(Value::as_array)
                .is_some_and(|list| !list.is_empty());
            let all = object.get("allowAllUnixSockets") == Some(&Value::Bool(true));
            match named || all {
                true => SandboxNetwork::Allow,
                false => SandboxNetwork::Inet,
            }
        }
        Some(network) => {
            SandboxNetwork::deserialize(network).map_err(|_| wrong("unknown `sandbox.network`"))?
        }
    };
    let excluded_commands = match map.get("excludedCommands") {
        None => Vec::new(),
        Some(list) => Vec::<String>::deserialize(list)
            .map_err(|_| wrong("`sandbox.excludedCommands` is not a list of commands"))?,
    };
    Ok(SandboxSettings {
        mode,
        writable_roots,
        network,
        excluded_commands,
    })
}
