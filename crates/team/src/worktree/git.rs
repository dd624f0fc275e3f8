//! Running real git: argument vectors (never a shell string), output captured, failures turned
//! into [`WorktreeError`]s that quote what git said.

use super::error::WorktreeError;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use troupe_tools::{
    child_env,
    git_env::{GitEnv, GitEnvError},
};

/// Runs `git -C <dir> <args>` and returns its trimmed stdout, or the error git gave.
pub fn git<I, S>(dir: &Path, args: I) -> Result<String, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (args, out) = run(dir, args)?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string());
    }
    Err(WorktreeError::Git {
        command: args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" "),
        detail: said(&out),
    })
}

/// Runs `git -C <dir> <args>`: `Some(stdout)` when it succeeds, `None` when it fails (for
/// questions whose "no" is a failing exit, such as `rev-parse --verify`).
pub fn git_ok<I, S>(dir: &Path, args: I) -> Result<Option<String>, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (_, out) = run(dir, args)?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string()))
}

/// Runs git in troupe's own process, so with every program the repository's config names turned
/// off ([`GitEnv`]): its hooks, fsmonitor, external diff, pager, credential helper and drivers
/// would otherwise run unconfined. Without troupe's provider keys, like every child. Returns the
/// arguments (for an error to name) with the output.
fn run<I, S>(dir: &Path, args: I) -> Result<(Vec<OsString>, Output), WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let env = match GitEnv::for_repo(dir) {
        Ok(env) => env,
        // No git at all: say so as every other git failure without git does.
        Err(GitEnvError::NoGit(why)) => return Err(WorktreeError::NoGit(why)),
        Err(err) => {
            return Err(WorktreeError::Git {
                command: "config --get-regexp (reading the programs the repository names)".into(),
                detail: err.to_string(),
            })
        }
    };
    let mut cmd = Command::new("git");
    child_env::scrub(&mut cmd);
    env.apply(&mut cmd);
    cmd.arg("-C")
        .arg(dir)
        .args(&args)
        // Never wait for a person: no credential or editor prompts.
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .map(|out| (args, out))
        .map_err(|e| WorktreeError::NoGit(e.to_string()))
}

/// What a failed git command said: its stderr, else its stdout, on one line.
fn said(out: &Output) -> String {
    let text = if out.stderr.is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        format!("exit status {}", out.status)
    } else {
        lines.join("; ")
    }
}
