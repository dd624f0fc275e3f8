//! Settings files (CONVENTIONS.md): `~/.troupe/settings.json`, `.troupe/settings.json`,
//! `.troupe/settings.local.json`, later files winning. Only the keys troupe uses so far are read.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The merged settings.
#[derive(Debug, Default, Clone)]
pub struct Settings {
    /// `teammate_mode`: `in-process` or `process`.
    pub teammate_mode: Option<String>,
    /// `teammate_permissions`: `lead` or `user` (who answers teammates' permission questions).
    pub teammate_permissions: Option<String>,
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
    }
    Ok(settings)
}
