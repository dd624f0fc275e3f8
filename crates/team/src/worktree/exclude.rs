//! Keeping troupe's state out of the user's `git status`: `/.troupe/` (anchored where the
//! workspace sits in the repository) goes into the repository's `info/exclude` — never into the
//! user's `.gitignore`. Idempotent, and safe when several processes start at once.

use super::error::WorktreeError;
use super::git::git_ok;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Where a workspace sits in its git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPlace {
    /// The workspace's path below the repository's top level, with a trailing `/` (empty at
    /// the top), as `git rev-parse --show-prefix` says.
    pub prefix: String,
    /// The repository's `info/exclude` file.
    pub exclude: PathBuf,
}

/// Where `workspace` sits in a git work tree; `None` when it is in none (or git is missing).
pub fn repo_place(workspace: &Path) -> Result<Option<RepoPlace>, WorktreeError> {
    let answer = match git_ok(
        workspace,
        [
            "rev-parse",
            "--is-inside-work-tree",
            "--show-prefix",
            "--git-path",
            "info/exclude",
        ],
    ) {
        Ok(answer) => answer,
        Err(WorktreeError::NoGit(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some(answer) = answer else {
        return Ok(None);
    };
    let lines: Vec<&str> = answer.lines().collect();
    match lines.as_slice() {
        ["true", prefix, exclude] => {
            let exclude = Path::new(exclude);
            Ok(Some(RepoPlace {
                prefix: prefix.to_string(),
                exclude: if exclude.is_absolute() {
                    exclude.to_path_buf()
                } else {
                    workspace.join(exclude)
                },
            }))
        }
        _ => Ok(None),
    }
}

/// The exclude line that hides `<workspace>/.troupe/` from `git status`.
pub fn exclude_line(prefix: &str) -> String {
    // A directory name may hold glob characters; escaped, the pattern matches only itself.
    let mut escaped = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    format!("/{escaped}.troupe/")
}

/// Makes sure the repository `workspace` is in ignores its `.troupe/` directory, by appending
/// one line to `info/exclude` when it is not there yet. Does nothing outside a git work tree.
/// Returns whether a line was added.
pub fn ensure_troupe_excluded(workspace: &Path) -> Result<bool, WorktreeError> {
    let Some(place) = repo_place(workspace)? else {
        return Ok(false);
    };
    let line = exclude_line(&place.prefix);
    let io = |e: std::io::Error| WorktreeError::Index {
        path: place.exclude.clone(),
        detail: e.to_string(),
    };
    if let Some(dir) = place.exclude.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&place.exclude)
        .map_err(io)?;
    // Two troupe processes starting at once must not both append the line.
    file.lock().map_err(io)?;
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io)?;
    if text.lines().any(|l| l.trim() == line) {
        return Ok(false);
    }
    let mut add = String::new();
    if !text.is_empty() && !text.ends_with('\n') {
        add.push('\n');
    }
    add.push_str("# troupe's state (added by troupe)\n");
    add.push_str(&line);
    add.push('\n');
    file.seek(SeekFrom::End(0)).map_err(io)?;
    file.write_all(add.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(true)
}
