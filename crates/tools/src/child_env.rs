//! The environment troupe hands to the programs it starts for the model and the workspace:
//! commands (foreground and background), hooks and stdio MCP servers. It is troupe's own,
//! without troupe's provider credentials — the model's commands have no business with the key
//! that pays for the model (codex's `shell_environment_policy` does the same by default).
//!
//! Withheld: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `OPENAI_API_KEY`, and every other
//! `ANTHROPIC_*`/`OPENAI_*` variable ending in `_API_KEY`, `_AUTH_TOKEN` or `_ACCESS_TOKEN`
//! (the only providers troupe has). The `commandEnv.passthrough` setting names variables that
//! pass anyway; an `.mcp.json` entry's own `env` still reaches its server, since it is set on
//! top. Those credentials are not in troupe's environment at all: the binary takes them out at
//! start and holds them in memory ([`crate::secrets`]); `troupe teammate` processes get them in
//! their launch document.
//!
//! What troupe adds to its own environment for its children (the settings' `env`, the team's
//! store, the trust decision) is an [`overlay`](set_overlay) resolved once at start-up, never
//! `std::env::set_var`: the process environment is not safe to change once threads run. Every
//! child gets the overlay on top of troupe's environment ([`scrub`], [`apply_overlay`]), and
//! troupe reads its own settings through [`var`], which sees the overlay first, then the
//! credentials troupe holds in memory ([`crate::secrets`]), then its environment.

use std::ffi::OsString;
use std::sync::RwLock;

/// The providers whose credentials are withheld, by variable prefix.
const PROVIDER_PREFIXES: &[&str] = &["ANTHROPIC_", "OPENAI_"];

/// The endings that mark a credential.
const CREDENTIAL_SUFFIXES: &[&str] = &["_API_KEY", "_AUTH_TOKEN", "_ACCESS_TOKEN"];

/// Variables the user's settings let through (`commandEnv.passthrough`).
static PASSTHROUGH: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Variables troupe gives every child on top of its own environment, in order (a later value
/// of a name wins).
static OVERLAY: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// Adds `vars` to the overlay every child gets (a name given again is replaced). Names that
/// cannot be environment variables (empty, with `=` or NUL) are skipped with a warning.
pub fn set_overlay(vars: impl IntoIterator<Item = (String, String)>) {
    let mut list = match OVERLAY.write() {
        Ok(list) => list,
        Err(poisoned) => poisoned.into_inner(),
    };
    for (key, value) in vars {
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            tracing::warn!(key, "skipping a variable that cannot be set");
            continue;
        }
        list.retain(|(k, _)| *k != key);
        list.push((key, value));
    }
}

/// The overlay, in order.
fn overlay() -> Vec<(String, String)> {
    match OVERLAY.read() {
        Ok(list) => list.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// The variable `name` as troupe's children see it: the overlay's value, else troupe's own
/// environment's (`None` when unset or not UTF-8).
pub fn var(name: &str) -> Option<String> {
    let from_overlay = overlay()
        .into_iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v);
    from_overlay
        .or_else(|| crate::secrets::held(name))
        .or_else(|| std::env::var(name).ok())
}

/// Sets the overlay on `cmd` (a `troupe teammate` process: troupe, so nothing is withheld).
pub fn apply_overlay(cmd: &mut std::process::Command) {
    for (key, value) in overlay() {
        cmd.env(key, value);
    }
}

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

/// Removes the withheld variables from `cmd`'s environment and sets the overlay (less the
/// withheld credentials it may name). Call it before setting any variable the child is meant
/// to have, so those win.
pub fn scrub(cmd: &mut std::process::Command) {
    let withheld = withheld();
    for key in &withheld {
        cmd.env_remove(key);
    }
    let pass = match PASSTHROUGH.read() {
        Ok(list) => list.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    for (key, value) in overlay() {
        if is_provider_credential(&key) && !pass.contains(&key) {
            cmd.env_remove(&key);
            continue;
        }
        cmd.env(key, value);
    }
    // A credential troupe holds in memory (taken out of its environment at start) reaches a
    // child only when the settings pass it through by name.
    for (key, value) in crate::secrets::all() {
        if pass.contains(&key) {
            cmd.env(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_reaches_children_over_troupes_environment_less_credentials() {
        set_overlay([
            ("TROUPE_OVERLAY_TEST".to_string(), "first".to_string()),
            ("TROUPE_OVERLAY_TEST".to_string(), "second".to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "sk-secret".to_string()),
            ("BAD=NAME".to_string(), "x".to_string()),
        ]);
        assert_eq!(var("TROUPE_OVERLAY_TEST").as_deref(), Some("second"));
        assert_eq!(var("ANTHROPIC_API_KEY").as_deref(), Some("sk-secret"));
        let mut cmd = std::process::Command::new("env");
        scrub(&mut cmd);
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("TROUPE_OVERLAY_TEST=second"), "{text}");
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(!text.contains("BAD=NAME"), "{text}");
        let mut teammate = std::process::Command::new("env");
        apply_overlay(&mut teammate);
        let out = teammate.output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("ANTHROPIC_API_KEY=sk-secret"));
    }

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
