//! "Remember": an allow rule the person chose, added to `.troupe/settings.local.json` — the
//! file's other settings and rules kept as they are, written atomically, a file that is not a
//! JSON object left untouched with an error that says so.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The local settings file of `workspace` (read by the settings loader, never committed).
pub fn local_settings(workspace: &Path) -> PathBuf {
    workspace.join(".troupe").join("settings.local.json")
}

/// Adds `rules` to `permissions.allow` of the settings file at `path` (made if missing);
/// rules already there are not repeated.
pub fn allow(path: &Path, rules: &[String]) -> Result<()> {
    let mut settings = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str::<Value>(&text).with_context(|| {
            format!(
                "{} is not valid JSON; it was left as it was",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let Some(root) = settings.as_object_mut() else {
        bail!(
            "{} is not a JSON object; it was left as it was",
            path.display()
        );
    };
    let permissions = root.entry("permissions").or_insert_with(|| json!({}));
    let Some(permissions) = permissions.as_object_mut() else {
        bail!(
            "\"permissions\" in {} is not an object; the file was left as it was",
            path.display()
        );
    };
    let allow = permissions.entry("allow").or_insert_with(|| json!([]));
    let Some(allow) = allow.as_array_mut() else {
        bail!(
            "\"permissions.allow\" in {} is not a list; the file was left as it was",
            path.display()
        );
    };
    for rule in rules {
        if !allow.iter().any(|r| r.as_str() == Some(rule)) {
            allow.push(Value::String(rule.clone()));
        }
    }
    let mut text = serde_json::to_string_pretty(&settings)?;
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    troupe_durable::atomic::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    crate::settings::forget_read();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_added_and_everything_else_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = local_settings(dir.path());
        allow(&path, &["Bash(cargo test:*)".into()]).unwrap();
        let first: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(first["permissions"]["allow"], json!(["Bash(cargo test:*)"]));
        std::fs::write(
            &path,
            r#"{"model": "m", "permissions": {"allow": ["Read"], "deny": ["Bash(rm:*)"]}}"#,
        )
        .unwrap();
        allow(&path, &["Read".into(), "Edit(./a)".into()]).unwrap();
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(kept["model"], "m");
        assert_eq!(kept["permissions"]["deny"], json!(["Bash(rm:*)"]));
        assert_eq!(kept["permissions"]["allow"], json!(["Read", "Edit(./a)"]));
    }

    #[test]
    fn a_broken_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = local_settings(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for broken in [
            "{not json",
            "[1, 2]",
            r#"{"permissions": {"allow": "Read"}}"#,
        ] {
            std::fs::write(&path, broken).unwrap();
            let err = allow(&path, &["Read".into()]).unwrap_err();
            assert!(format!("{err:#}").contains("left as it was"), "{err:#}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
        }
    }
}
