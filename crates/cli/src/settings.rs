//! Settings files (CONVENTIONS.md): `~/.troupe/settings.json`, `.troupe/settings.json`,
//! `.troupe/settings.local.json`, later files winning. Only the keys troupe uses so far are read.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use troupe_tools::{SandboxConfig, SandboxMode};

/// The merged settings.
#[derive(Debug, Default, Clone)]
pub struct Settings {
    /// `teammate_mode`: `in-process` or `process`.
    pub teammate_mode: Option<String>,
    /// `teammate_permissions`: `lead` or `user` (who answers teammates' permission questions).
    pub teammate_permissions: Option<String>,
    /// `sandbox`: `"auto"` (default), `"off"`, or `{"mode": …, "writableRoots": […]}`.
    pub sandbox: SandboxConfig,
}

fn files(workspace: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        out.push(PathBuf::from(home).join(".troupe/settings.json"));
    }
    out.push(workspace.join(".troupe/settings.json"));
    out.push(workspace.join(".troupe/settings.local.json"));
    out
}

/// Reads and merges the settings files; a malformed file is an error naming it.
pub fn load(workspace: &Path) -> Result<Settings> {
    let mut settings = Settings::default();
    for path in files(workspace) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; fix or remove it", path.display()))?;
        if let Some(mode) = value.get("teammate_mode").and_then(Value::as_str) {
            settings.teammate_mode = Some(mode.to_string());
        }
        if let Some(who) = value.get("teammate_permissions").and_then(Value::as_str) {
            settings.teammate_permissions = Some(who.to_string());
        }
        if let Some(sandbox) = value.get("sandbox") {
            settings.sandbox = sandbox_config(sandbox)
                .with_context(|| format!("{}: invalid \"sandbox\" setting", path.display()))?;
        }
    }
    Ok(settings)
}

/// Parses `"sandbox"`: a mode name, or an object with `mode` and `writableRoots`.
fn sandbox_config(value: &Value) -> Result<SandboxConfig> {
    const SHAPE: &str = "expected \"auto\", \"off\", or {\"mode\": \"auto\"|\"off\", \
                         \"writableRoots\": [\"/absolute/path\", …]}";
    match value {
        Value::String(mode) => Ok(SandboxConfig {
            mode: sandbox_mode(mode)?,
            writable_roots: Vec::new(),
        }),
        Value::Object(fields) => {
            let mut config = SandboxConfig::default();
            for (key, field) in fields {
                match (key.as_str(), field) {
                    ("mode", Value::String(mode)) => config.mode = sandbox_mode(mode)?,
                    ("writableRoots", Value::Array(roots)) => {
                        for root in roots {
                            config.writable_roots.push(writable_root(root)?);
                        }
                    }
                    ("mode" | "writableRoots", other) => {
                        bail!("\"{key}\" has the wrong type ({other}); {SHAPE}")
                    }
                    (unknown, _) => bail!("unknown key \"{unknown}\"; {SHAPE}"),
                }
            }
            Ok(config)
        }
        other => bail!("got {other}; {SHAPE}"),
    }
}

fn sandbox_mode(text: &str) -> Result<SandboxMode> {
    match text {
        "auto" => Ok(SandboxMode::Auto),
        "off" => Ok(SandboxMode::Off),
        other => bail!("unknown sandbox mode \"{other}\"; expected \"auto\" or \"off\""),
    }
}

fn writable_root(value: &Value) -> Result<PathBuf> {
    let Some(text) = value.as_str() else {
        bail!("writableRoots entries are paths (strings), got {value}");
    };
    let path = PathBuf::from(text);
    if !path.is_absolute() {
        bail!("writableRoots entry \"{text}\" is not an absolute path");
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sandbox_accepts_a_mode_or_an_object() {
        assert_eq!(
            sandbox_config(&json!("off")).unwrap().mode,
            SandboxMode::Off
        );
        let config =
            sandbox_config(&json!({"mode": "auto", "writableRoots": ["/srv/cache"]})).unwrap();
        assert_eq!(config.mode, SandboxMode::Auto);
        assert_eq!(config.writable_roots, vec![PathBuf::from("/srv/cache")]);
    }

    #[test]
    fn sandbox_refuses_what_it_does_not_understand() {
        for (value, says) in [
            (json!("on"), "unknown sandbox mode \"on\""),
            (json!(true), "expected \"auto\""),
            (
                json!({"writableRoots": ["rel/path"]}),
                "not an absolute path",
            ),
            (
                json!({"writable_roots": []}),
                "unknown key \"writable_roots\"",
            ),
            (json!({"mode": 1}), "wrong type"),
        ] {
            let err = format!("{:#}", sandbox_config(&value).unwrap_err());
            assert!(err.contains(says), "{value}: {err}");
        }
    }
}
