//! [`GitEnv::for_repo`] remembered per directory while nothing that could change its answer
//! changed, so a read-only bash call that mentions git does not start `git config` each time.
//!
//! The answer depends on the repository's own config (`local` and `worktree` scopes, includes
//! followed) and on `diff.external` in any scope. A directory's answer is kept with the identity
//! (device, inode, size, change and modification times) of every file those come from: the
//! repository's `config` and `config.worktree`, the user's `~/.gitconfig` and
//! `$XDG_CONFIG_HOME/git/config`, and `/etc/gitconfig`. Any change to one (a write changes its
//! change time, which no one but root can set back) and git is asked again. Where the files do
//! not tell the whole story — an `include` in one, a `.git` file (linked worktree, submodule),
//! `GIT_DIR` or a variable naming other config files — nothing is kept.

use super::{GitEnv, GitEnvError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Variables that make git read config files the fingerprint does not cover.
const UNCOVERED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_COMMON_DIR",
];

/// One config file's identity; `None` when it does not exist.
type FileId = Option<(u64, u64, u64, i64, i64, i64, i64)>;

/// The identities of the files a directory's answer comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint(Vec<(PathBuf, FileId)>);

static CACHE: Mutex<Vec<(PathBuf, Fingerprint, GitEnv)>> = Mutex::new(Vec::new());

/// [`GitEnv::for_repo`], from the cache when the files behind the answer are unchanged.
pub(super) fn for_repo_cached(dir: &Path) -> Result<GitEnv, GitEnvError> {
    let Some(files) = config_files(dir) else {
        return GitEnv::for_repo(dir);
    };
    let before = fingerprint(&files);
    if let Ok(cache) = CACHE.lock() {
        if let Some((_, _, env)) = cache.iter().find(|(d, f, _)| d == dir && *f == before) {
            return Ok(env.clone());
        }
    }
    let env = GitEnv::for_repo(dir)?;
    // Kept only when no file names another and none changed while git read them.
    if !files.iter().any(|f| includes_another(f)) && fingerprint(&files) == before {
        if let Ok(mut cache) = CACHE.lock() {
            cache.retain(|(d, _, _)| d != dir);
            cache.push((dir.to_path_buf(), before, env.clone()));
        }
    }
    Ok(env)
}

/// The config files git reads for `dir`, or `None` when others may count too.
fn config_files(dir: &Path) -> Option<Vec<PathBuf>> {
    if UNCOVERED_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        return None;
    }
    let mut files = Vec::new();
    for above in dir.ancestors() {
        let dot_git = above.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                files.push(dot_git.join("config"));
                files.push(dot_git.join("config.worktree"));
                break;
            }
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(home) = &home {
        files.push(home.join(".gitconfig"));
    }
    match std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        Some(xdg) => files.push(PathBuf::from(xdg).join("git/config")),
        None => files.extend(home.map(|h| h.join(".config/git/config"))),
    }
    files.push(PathBuf::from("/etc/gitconfig"));
    Some(files)
}

fn fingerprint(files: &[PathBuf]) -> Fingerprint {
    use std::os::unix::fs::MetadataExt;
    Fingerprint(
        files
            .iter()
            .map(|f| {
                let id = std::fs::metadata(f).ok().map(|m| {
                    (
                        m.dev(),
                        m.ino(),
                        m.size(),
                        m.ctime(),
                        m.ctime_nsec(),
                        m.mtime(),
                        m.mtime_nsec(),
                    )
                });
                (f.clone(), id)
            })
            .collect(),
    )
}

/// Whether `file` may pull in another config file (`[include]`, `[includeIf …]`); an
/// unreadable file counts as one that may.
fn includes_another(file: &Path) -> bool {
    match std::fs::read(file) {
        Ok(bytes) => bytes
            .windows(b"include".len())
            .any(|w| w.eq_ignore_ascii_case(b"include")),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_to_the_repository_config_is_seen_and_includes_are_never_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        let has = |env: &GitEnv, key: &str| env.overrides().iter().any(|(k, _)| k == key);
        let first = for_repo_cached(&dir).unwrap();
        assert!(!has(&first, "filter.evil.smudge"));
        git(&["config", "filter.evil.smudge", "touch /tmp/pwned"]);
        let second = for_repo_cached(&dir).unwrap();
        assert!(has(&second, "filter.evil.smudge"), "the new driver is seen");
        std::fs::write(dir.join("other.cfg"), "[diff \"x\"]\n\ttextconv = evil\n").unwrap();
        git(&["config", "include.path", "../other.cfg"]);
        let third = for_repo_cached(&dir).unwrap();
        assert!(has(&third, "diff.x.textconv"), "an included driver is seen");
        std::fs::write(dir.join("other.cfg"), "[merge \"y\"]\n\tdriver = evil\n").unwrap();
        let fourth = for_repo_cached(&dir).unwrap();
        assert!(
            has(&fourth, "merge.y.driver"),
            "a change in an included file is seen (nothing with an include is kept)"
        );
    }
}
