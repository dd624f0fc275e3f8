//! The environment troupe hands to the programs it starts for the model and the workspace:
//! commands (foreground and background), hooks and stdio MCP servers. It is troupe's own,
//! without troupe's provider credentials — the model's commands have no business with the key
//! that pays for the model (codex's `shell_environment_policy` does the same by default).
//!
//! Withheld: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `OPENAI_API_KEY`, and every other
//! `ANTHROPIC_*`/`OPENAI_*` variable ending in `_API_KEY`, `_AUTH_TOKEN` or `_ACCESS_TOKEN`
//! (the only providers troupe has). The `commandEnv.passthrough` setting names variables that
//! pass anyway; an `.mcp.json` entry's own `env` still reaches its server, since it is set on
//! top. `troupe teammate` processes troupe starts keep everything: they are troupe.

use std::ffi::OsString;
use std::sync::RwLock;

/// The providers whose credentials are withheld, by variable prefix.
const PROVIDER_PREFIXES: &[&str] = &["ANTHROPIC_", "OPENAI_"];

/// The endings that mark a credential.
const CREDENTIAL_SUFFIXES: &[&str] = &["_API_KEY", "_AUTH_TOKEN", "_ACCESS_TOKEN"];

/// Variables the user's settings let through (`commandEnv.passthrough`).
static PASSTHROUGH: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Sets the variables that pass through although they are credentials (from settings, once at
/// start-up).
pub fn set_passthrough(names: Vec<String>) {
    match PASSTHROUGH.write() {
        Ok(mut list) => *list = names,
        Err(poisoned) => *poisoned.into_inner() = names,
    }
}

/// Whether `name` is a provider credential troupe keeps to itself.
pub fn is_provider_credential(name: &str) -> bool {
    PROVIDER_PREFIXES.iter().any(|p| name.starts_with(p))
        && CREDENTIAL_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The variables of troupe's environment a child must not see: the provider credentials, less
/// the ones passed through.
pub fn withheld() -> Vec<OsString> {
    let pass = match PASSTHROUGH.read() {
        Ok(list) => list.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    std::env::vars_os()
        .filter_map(|(key, _)| {
            let name = key.to_str()?;
            (is_provider_credential(name) && !pass.iter().any(|p| p == name)).then_some(key)
        })
        .collect()
}

/// Removes the withheld variables from `cmd`'s environment. Call it before setting any variable
/// the child is meant to have, so those win.
pub fn scrub(cmd: &mut std::process::Command) {
    for key in withheld() {
        cmd.env_remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_credentials_are_recognised() {
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_API_KEY",
            "OPENAI_ADMIN_API_KEY",
        ] {
            assert!(is_provider_credential(name), "{name}");
        }
        for name in [
            "ANTHROPIC_BASE_URL",
            "OPENAI_BASE_URL",
            "GITHUB_TOKEN",
            "PATH",
            "ANTHROPIC_MODEL",
        ] {
            assert!(!is_provider_credential(name), "{name}");
        }
    }
}
