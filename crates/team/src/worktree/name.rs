//! The worktree naming rule: a name becomes a directory (`.troupe/worktrees/<name>`) and a
//! branch (`wt/<name>`), so it must be safe as both.

use super::error::WorktreeError;
use super::git::git_ok;
use std::path::Path;

/// The longest name accepted.
pub const MAX_NAME_LEN: usize = 64;

/// The branch a worktree's work lives on.
pub fn branch_of(name: &str) -> String {
    format!("wt/{name}")
}

/// Checks a worktree name: ASCII letters, digits, `-`, `_` and `.`; not empty, not starting with
/// `-` or `.`, no `..`, not ending in `.` or `.lock`, at most [`MAX_NAME_LEN`] characters — and
/// `wt/<name>` must be a branch name git accepts (`git check-ref-format`).
pub fn validate_name(name: &str, dir: &Path) -> Result<(), WorktreeError> {
    check_shape(name).map_err(|reason| WorktreeError::BadName {
        name: name.to_string(),
        reason: reason.to_string(),
    })?;
    let reference = format!("refs/heads/{}", branch_of(name));
    if git_ok(dir, ["check-ref-format", reference.as_str()])?.is_none() {
        return Err(WorktreeError::BadName {
            name: name.to_string(),
            reason: format!("git refuses {} as a branch name", branch_of(name)),
        });
    }
    Ok(())
}

/// The rule itself, without git: `Err` says which part is broken.
pub fn check_shape(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("a name is needed");
    }
    if name.contains('/') || name.contains('\\') {
        return Err("it may not contain '/' or '\\' (a worktree is one directory)");
    }
    if name.contains("..") {
        return Err("it may not contain '..'");
    }
    if name.starts_with('-') {
        return Err("it may not start with '-'");
    }
    if name.starts_with('.') {
        return Err("it may not start with '.'");
    }
    if name.ends_with('.') || name.ends_with(".lock") {
        return Err("it may not end with '.' or '.lock'");
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err("it may be at most 64 characters long");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("use ASCII letters, digits, '-', '_' and '.' only");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in ["a", "task-1", "alice", "fix_login.v2", "A9"] {
            assert_eq!(check_shape(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn refuses_paths_dots_options_and_git_specials() {
        for name in [
            "", "a/b", "../x", "..", "a..b", "-rf", ".hidden", "x.", "x.lock", "a b", "a~1", "a^",
            "a:b", "a?", "a*", "a[", "a\\b", "é",
        ] {
            assert!(check_shape(name).is_err(), "{name:?} was accepted");
        }
        assert!(check_shape(&"x".repeat(65)).is_err());
    }
}
