//! Running git without the programs a repository's own config names.
//!
//! A repository can make git run programs of its choosing: hooks (`.git/hooks`, `core.hooksPath`),
//! `core.fsmonitor`, `diff.external`, `core.pager`, `credential.helper`, `core.sshCommand`, and
//! the drivers its config defines for the paths `.gitattributes` marks (`filter.<d>.clean`,
//! `smudge`, `process`; `diff.<d>.textconv` and `command`; `merge.<d>.driver`). Whoever can write
//! the repository's config or hooks (an allowed `cp`, a cloned repository) could then run code
//! through troupe's own git (worktrees, merge checks) and through the git commands the shell
//! analysis lets run as read-only.
//!
//! [`GitEnv`] turns them off through git's `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
//! `GIT_CONFIG_VALUE_n` overrides, which win over every config file. The fixed ones apply to every
//! repository; the drivers are per name, so the repository's own config (its `local` and
//! `worktree` scopes, includes followed) is read first — reading runs nothing — and each driver
//! it defines is overridden. Drivers from the user's own (global, system) config are the user's
//! and stay. Where git has no "off" value, the override is a harmless stand-in: `cat` for a
//! textconv, a line saying what was not run for an external diff.

mod cache;

use std::path::Path;
use std::process::{Command, Stdio};

/// Overrides for every repository: hooks from a directory that does not exist, no file-system
/// monitor, no pager, no credential helper, plain ssh, no signature checks in `git log`.
const FIXED: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null/troupe-no-hooks"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("log.showSignature", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
];

/// Stands in for an external diff program a config names: one line per file, saying so.
pub const NO_EXTERNAL_DIFF: &str = "f() { echo \"troupe: $1: not shown through the external diff \
program the git config names (it is not run); git diff --no-ext-diff shows the change\"; }; f";

/// Environment variables that would override the overrides or run a program themselves.
const REMOVED: &[&str] = &["GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF"];

/// The environment that runs git with repository-configured programs turned off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitEnv {
    overrides: Vec<(String, String)>,
}

/// Why the repository's config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GitEnvError {
    /// git cannot be started.
    #[error("cannot run git: {0}")]
    NoGit(String),
    /// git ran but could not read the config.
    #[error("cannot read the git config of {dir} to turn off the programs it names: {detail}")]
    Unreadable {
        /// The directory git was run in.
        dir: String,
        /// What git said.
        detail: String,
    },
}

impl GitEnv {
    /// The fixed overrides only, for when no repository's drivers are known.
    pub fn fixed() -> GitEnv {
        GitEnv {
            overrides: FIXED
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The fixed overrides plus one for each driver and program the config of the repository at
    /// `dir` defines. Fails when git cannot be run or cannot read that config.
    pub fn for_repo(dir: &Path) -> Result<GitEnv, GitEnvError> {
        let mut env = GitEnv::fixed();
        for key in repo_keys(dir)? {
            env.neutralise(&key);
        }
        Ok(env)
    }

    /// For a shell about to run `command` in `dir`: the repository's drivers are read only when
    /// the command mentions git at all (so other commands pay nothing); a config that cannot be
    /// read leaves the fixed overrides (git then cannot read it either, so runs nothing from it).
    pub fn for_command(dir: &Path, command: &str) -> GitEnv {
        if !command.contains("git") {
            return GitEnv::fixed();
        }
        // Remembered while the config files behind it are unchanged (`cache`): a run of git
        // reads starts `git config` once, not once per call.
        cache::for_repo_cached(dir).unwrap_or_else(|err| {
            tracing::debug!(%err, "git overrides: fixed ones only");
            GitEnv::fixed()
        })
    }

    /// The `(key, value)` config overrides, in order.
    pub fn overrides(&self) -> &[(String, String)] {
        &self.overrides
    }

    /// Puts the overrides into `cmd`'s environment, after any `GIT_CONFIG_COUNT` entries troupe's
    /// own environment already has (later entries win), and removes the variables that would
    /// override them or name a program.
    pub fn apply(&self, cmd: &mut Command) {
        let start = std::env::var("GIT_CONFIG_COUNT")
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        for (i, (key, value)) in self.overrides.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{}", start + i), key);
            cmd.env(format!("GIT_CONFIG_VALUE_{}", start + i), value);
        }
        cmd.env(
            "GIT_CONFIG_COUNT",
            (start + self.overrides.len()).to_string(),
        );
        for var in REMOVED {
            cmd.env_remove(var);
        }
        // The environment's pager and editor win over any `pager.<cmd>` or `core.editor`.
        cmd.env("GIT_PAGER", "cat");
        cmd.env("GIT_EDITOR", "true");
        cmd.env("GIT_SEQUENCE_EDITOR", "true");
    }

    /// Adds the overrides that turn off what config `key` (as the repository sets it) runs.
    fn neutralise(&mut self, key: &str) {
        let lower = key.to_ascii_lowercase();
        let mut add = |k: String, v: &str| {
            if !self.overrides.iter().any(|(old, _)| *old == k) {
                self.overrides.push((k, v.to_string()));
            }
        };
        if lower == "diff.external" {
            add("diff.external".into(), NO_EXTERNAL_DIFF);
            return;
        }
        for (prefix, program) in [
            ("gpg.program", "gpg"),
            ("gpg.openpgp.program", "gpg"),
            ("gpg.x509.program", "gpgsm"),
            ("gpg.ssh.program", "ssh-keygen"),
            ("gpg.ssh.defaultkeycommand", ""),
        ] {
            if lower == prefix {
                add(prefix.into(), program);
                return;
            }
        }
        // `<section>.<driver>.<variable>`: the driver's name keeps its case and may hold dots.
        let Some((section, rest)) = key.split_once('.') else {
            return;
        };
        let Some((driver, _)) = rest.rsplit_once('.') else {
            return;
        };
        match section.to_ascii_lowercase().as_str() {
            "filter" => {
                // An empty command is git's "no filter"; a required filter would then fail.
                for var in ["clean", "smudge", "process"] {
                    add(format!("filter.{driver}.{var}"), "");
                }
                add(format!("filter.{driver}.required"), "false");
            }
            "diff" => {
                add(format!("diff.{driver}.textconv"), "cat");
                add(format!("diff.{driver}.command"), NO_EXTERNAL_DIFF);
            }
            "merge" => add(format!("merge.{driver}.driver"), "false"),
            _ => {}
        }
    }
}

/// The names of the config keys the repository at `dir` itself sets (scopes `local` and
/// `worktree`, includes followed) in the sections that name programs, and `diff.external` from
/// any scope.
fn repo_keys(dir: &Path) -> Result<Vec<String>, GitEnvError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args([
            "config",
            "--show-scope",
            "--includes",
            "--name-only",
            "-z",
            "--get-regexp",
            r"^(filter|diff|merge|gpg)\.",
        ])
        .stdin(Stdio::null());
    GitEnv::fixed().apply(&mut cmd);
    let out = cmd
        .output()
        .map_err(|e| GitEnvError::NoGit(e.to_string()))?;
    match out.status.code() {
        Some(0) => {}
        // Nothing matched.
        Some(1) => return Ok(Vec::new()),
        _ => {
            let said = String::from_utf8_lossy(&out.stderr);
            return Err(GitEnvError::Unreadable {
                dir: dir.display().to_string(),
                detail: said.trim().to_string(),
            });
        }
    }
    let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    Ok(fields
        .chunks(2)
        .filter_map(|pair| match pair {
            // An external diff stands in for every diff, whichever config names it (git has no
            // value that turns it off, so it is replaced only where one is set).
            [_, key] if key.eq_ignore_ascii_case(b"diff.external") => {
                Some(String::from_utf8_lossy(key).into_owned())
            }
            [scope, key] if matches!(*scope, b"local" | b"worktree") => {
                Some(String::from_utf8_lossy(key).into_owned())
            }
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_are_neutralised_by_name_keeping_case() {
        let mut env = GitEnv::fixed();
        env.neutralise("filter.Evil.Driver.smudge");
        env.neutralise("diff.pdf.textconv");
        env.neutralise("merge.ours.driver");
        env.neutralise("diff.external");
        let has = |k: &str, v: &str| env.overrides().iter().any(|(a, b)| a == k && b == v);
        assert!(has("filter.Evil.Driver.smudge", ""));
        assert!(has("filter.Evil.Driver.clean", ""));
        assert!(has("filter.Evil.Driver.process", ""));
        assert!(has("filter.Evil.Driver.required", "false"));
        assert!(has("diff.pdf.textconv", "cat"));
        assert!(has("diff.pdf.command", NO_EXTERNAL_DIFF));
        assert!(has("merge.ours.driver", "false"));
        assert!(has("diff.external", NO_EXTERNAL_DIFF));
        assert!(has("core.hooksPath", "/dev/null/troupe-no-hooks"));
    }
}
