//! `CLAUDE_ENV_FILE`: a file SessionStart hooks may write `export NAME=value` lines to; once
//! they ran, troupe sets those variables for every command it starts afterwards (through the
//! child-environment overlay, never troupe's own environment).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable that names the file.
pub(crate) const VAR: &str = "CLAUDE_ENV_FILE";

/// One session start's environment file, removed when dropped.
pub(crate) struct EnvFile {
    path: PathBuf,
}

impl EnvFile {
    /// Makes an empty file only this user can read, in the temporary directory.
    pub(crate) fn create() -> Option<EnvFile> {
        use std::os::unix::fs::OpenOptionsExt;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("troupe-env-{}-{n}.sh", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .ok()?;
        Some(EnvFile { path })
    }

    /// Where the hooks find it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Sets what the hooks wrote for every later child; returns the names set.
    pub(crate) fn apply(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let vars = parse(&text);
        let names = vars.iter().map(|(k, _)| k.clone()).collect();
        troupe_tools::child_env::set_overlay(vars);
        names
    }
}

impl Drop for EnvFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The `NAME=value` assignments of `text` (`export ` optional, one pair of quotes taken off;
/// comments and other lines skipped).
fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            let (name, value) = line.split_once('=')?;
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return None;
            }
            let value = value.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q))
                .unwrap_or(value);
            Some((name.to_string(), unquoted.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_are_read_as_a_shell_would_write_them() {
        let vars = parse(
            "# set by a hook\nexport NODE_ENV=production\nPATH_EXTRA='/opt/bin'\n\
             export QUOTED=\"a b\"\nnot an assignment\n1BAD=x\n",
        );
        assert_eq!(
            vars,
            vec![
                ("NODE_ENV".into(), "production".into()),
                ("PATH_EXTRA".into(), "/opt/bin".into()),
                ("QUOTED".into(), "a b".into()),
            ]
        );
    }
}
