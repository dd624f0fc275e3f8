//! The OS sandbox under the permission rules: on Linux, Landlock confines every process a bash
//! call starts (children inherit it; nothing inside can lift it).
//!
//! The level comes from why the call was allowed: allowed only because it was judged read-only
//! → [`Sandbox::ReadOnly`]; allowed by a rule or a person → [`Sandbox::WorkspaceWrite`];
//! `bypassPermissions` → [`Sandbox::Unsandboxed`]. See [`paths`] for what each level may write.
//!
//! Under Landlock, a confined call may get a private mount namespace ([`mounts`]: protected files
//! read-only at workspace-write, Read-denied paths covered at every level) and always gets a
//! seccomp filter ([`seccomp`]: no `socket()` at read-only or with `network: deny`). All of it
//! is prepared here, before the spawn; the child only makes system calls.

pub mod hide;
pub mod mounts;
pub mod paths;
pub mod protect;
mod ruleset;
mod scratch;
mod seccomp;
mod support;

pub use paths::{writable_paths, Writable, WritableKind};
pub use protect::Protected;
pub use scratch::{retire, wait_retired, Scratch};
pub use seccomp::Network;
pub use support::{
    kernel_abi, namespaces, seccomp_support, support, unsupported, Support, FORCE_NO_NAMESPACE_ENV,
    FORCE_UNSUPPORTED_ENV, MIN_ABI,
};

use crate::Concealed;
use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How far one call's processes are confined. Ordered strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sandbox {
    /// The whole filesystem is read-only, except device sinks and a private `$TMPDIR`.
    ReadOnly,
    /// Writes only inside the workspace, the private `$TMPDIR`, configured roots and package caches.
    WorkspaceWrite,
    /// No confinement (`bypassPermissions`, or `"sandbox": "off"`).
    Unsandboxed,
}

impl Sandbox {
    /// The level as settings and messages spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Sandbox::ReadOnly => "read-only",
            Sandbox::WorkspaceWrite => "workspace-write",
            Sandbox::Unsandboxed => "unsandboxed",
        }
    }

    /// The stricter of two levels.
    pub fn stricter(self, other: Sandbox) -> Sandbox {
        self.min(other)
    }
}

impl fmt::Display for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the sandbox is used at all (`"sandbox"` in settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Confine calls whenever their permission needs it; fail closed where that is impossible.
    #[default]
    Auto,
    /// Never confine. Gives up the guarantee: a command allowed as read-only can then write.
    Off,
}

impl SandboxMode {
    /// The mode as settings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Off => "off",
        }
    }
}

/// The sandbox settings of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Auto or off.
    pub mode: SandboxMode,
    /// Absolute paths workspace-write calls may also write beneath.
    pub writable_roots: Vec<PathBuf>,
    /// Which sockets workspace-write calls may open (`sandbox.network`); read-only never may.
    pub network: Network,
    /// Files protected besides the built-in ones: the hook scripts settings name (absolute, or
    /// relative to the workspace).
    pub protected: Vec<PathBuf>,
    /// What the Read deny rules cover; confined calls cannot read it.
    pub concealed: Concealed,
    /// Commands that run unconfined when a rule or the person allowed them
    /// (`sandbox.excludedCommands`, see [`SandboxConfig::excludes`]).
    pub excluded_commands: Vec<String>,
}

impl SandboxConfig {
    /// The level a call actually runs at, given the level its permission asked for.
    pub fn effective(&self, wanted: Sandbox) -> Sandbox {
        match self.mode {
            SandboxMode::Auto => wanted,
            SandboxMode::Off => Sandbox::Unsandboxed,
        }
    }

    /// Whether the bash `command` runs outside the sandbox: every command the line runs is one
    /// `excluded_commands` names (`docker` names every docker command, `git push` those that
    /// start so; `docker:*` and `docker *` as `docker`), and the analysis pinned all of it down.
    /// Anything it cannot pin down stays confined.
    pub fn excludes(&self, command: &str) -> bool {
        if self.excluded_commands.is_empty() {
            return false;
        }
        let analysis = crate::shell::analyze(command);
        if !analysis.is_understood() || analysis.commands.is_empty() {
            return false;
        }
        let patterns: Vec<Vec<&str>> = self
            .excluded_commands
            .iter()
            .map(|p| {
                p.trim()
                    .trim_end_matches(":*")
                    .trim_end_matches(" *")
                    .split_whitespace()
                    .collect()
            })
            .filter(|words: &Vec<&str>| !words.is_empty())
            .collect();
        analysis.commands.iter().all(|cmd| {
            let Some(program) = cmd.program() else {
                return false;
            };
            let words: Vec<&str> = std::iter::once(program)
                .chain(cmd.words.iter().skip(1).map(|w| w.text.as_str()))
                .collect();
            patterns.iter().any(|p| words.starts_with(p))
        })
    }

    /// Whether calls at `level` run without sockets.
    pub fn denies_network(&self, level: Sandbox) -> bool {
        match level {
            Sandbox::ReadOnly => true,
            Sandbox::WorkspaceWrite => self.network == Network::Deny,
            Sandbox::Unsandboxed => false,
        }
    }

    /// Whether calls at `level` need a private mount namespace.
    pub fn needs_namespace(&self, level: Sandbox) -> bool {
        match level {
            Sandbox::ReadOnly => !self.concealed.is_empty(),
            Sandbox::WorkspaceWrite => true,
            Sandbox::Unsandboxed => false,
        }
    }
}

/// Why a call could not be confined; the command does not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This machine cannot confine commands.
    #[error("this machine cannot confine commands: {0}")]
    Unsupported(String),
    /// The private temporary directory could not be made.
    #[error("could not create the call's temporary directory: {0}")]
    Scratch(#[source] std::io::Error),
    /// Landlock refused the ruleset.
    #[error("could not build the Landlock ruleset: {0}")]
    Landlock(String),
    /// The seccomp filter could not be compiled.
    #[error("could not build the seccomp filter: {0}")]
    Seccomp(String),
    /// The mounts of the call's namespace could not be prepared.
    #[error("could not prepare the sandbox's mounts: {0}")]
    Mounts(#[source] std::io::Error),
    /// The paths Read deny rules cover could not all be found.
    #[error("troupe cannot hide the paths Read deny rules cover: {0}")]
    Hide(String),
}

/// What the forked child does to confine itself, prepared in troupe: shared with the spawn's
/// `pre_exec` closure, read (never changed or freed) in the child.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// The Landlock ruleset descriptor (owned by the [`Confinement`]).
    pub(crate) ruleset: RawFd,
    /// The mount namespace, when the call needs one.
    pub(crate) mounts: Option<mounts::MountPlan>,
    /// The seccomp filter.
    pub(crate) filter: seccomp::Filter,
}

/// Everything one call's confinement needs, prepared before the command is spawned.
#[derive(Debug)]
pub struct Confinement {
    level: Sandbox,
    scratch: Option<Scratch>,
    ruleset: Option<OwnedFd>,
    plan: Option<Arc<ChildPlan>>,
    protected: Protected,
}

impl Confinement {
    /// Prepares `level` (as `config` has it: off means unconfined) for a call in `workspace`:
    /// the private temporary directory and the ruleset. Fails when the level needs a sandbox
    /// this machine cannot provide.
    pub fn prepare(
        level: Sandbox,
        workspace: &Path,
        config: &SandboxConfig,
    ) -> Result<Confinement, SandboxError> {
        let level = config.effective(level);
        if level == Sandbox::Unsandboxed {
            return Ok(Confinement {
                level,
                scratch: None,
                ruleset: None,
                plan: None,
                protected: Protected::default(),
            });
        }
        if let Some(why) = unsupported(level, config) {
            return Err(SandboxError::Unsupported(why));
        }
        let network = match config.denies_network(level) {
            true => Network::Deny,
            false => config.network,
        };
        let filter = seccomp::build(network)?;
        let protected = match level {
            Sandbox::WorkspaceWrite => Protected::survey(workspace, &config.protected),
            Sandbox::ReadOnly | Sandbox::Unsandboxed => Protected::default(),
        };
        let hidden = hide::find(&config.concealed, workspace)?;
        // Every confined call gets a PID namespace and a private /proc where this machine can
        // make namespaces at all; one that needs a mount namespace and cannot have one was
        // refused above.
        let private_pids = namespaces().is_ok();
        let mounts = match config.needs_namespace(level) || private_pids {
            true => {
                let mut plan = mounts::MountPlan::new();
                if private_pids {
                    plan.private_pids();
                }
                protected.plan(&mut plan).map_err(SandboxError::Mounts)?;
                for hidden in &hidden {
                    let kind = match hidden.is_dir {
                        true => mounts::Kind::HideDir,
                        false => mounts::Kind::HideFile,
                    };
                    plan.push(kind, &hidden.path)
                        .map_err(SandboxError::Mounts)?;
                }
                // Nothing to mount and no PID namespace: no namespace.
                (!plan.is_empty()).then_some(plan)
            }
            false => None,
        };
        let scratch = Scratch::create().map_err(SandboxError::Scratch)?;
        let writable = writable_paths(level, workspace, Some(scratch.path()), config);
        let ruleset = ruleset::build(level, &writable)?;
        let plan = ChildPlan {
            ruleset: ruleset.as_raw_fd(),
            mounts,
            filter,
        };
        Ok(Confinement {
            level,
            scratch: Some(scratch),
            ruleset: Some(ruleset),
            plan: Some(Arc::new(plan)),
            protected,
        })
    }

    /// What the child does to confine itself, when confined.
    pub(crate) fn child_plan(&self) -> Option<Arc<ChildPlan>> {
        self.plan.clone()
    }

    /// The protected paths as found before the call; [`Protected::after_call`] removes those
    /// the call created.
    pub fn protected(&self) -> &Protected {
        &self.protected
    }

    /// The level.
    pub fn level(&self) -> Sandbox {
        self.level
    }

    /// The private temporary directory, when confined.
    pub fn scratch_dir(&self) -> Option<&Path> {
        self.scratch.as_ref().map(Scratch::path)
    }

    /// The ruleset descriptor the child restricts itself with, when confined.
    pub fn ruleset_fd(&self) -> Option<RawFd> {
        self.ruleset.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Closes the ruleset (once the child has it) and keeps the temporary directory, which is
    /// deleted when the returned value is dropped.
    pub fn into_scratch(self) -> Option<Scratch> {
        self.scratch
    }
}

#[cfg(test)]
mod tests {
    use super::SandboxConfig;

    #[test]
    fn excluded_commands_match_every_command_of_a_line_pinned_down() {
        let config = SandboxConfig {
            excluded_commands: vec!["docker".into(), "git push".into(), "npm:*".into()],
            ..SandboxConfig::default()
        };
        for line in [
            "docker ps",
            "/usr/bin/docker run x",
            "git push origin",
            "npm test && docker ps",
        ] {
            assert!(config.excludes(line), "{line}");
        }
        for line in [
            "git status",
            "docker ps; rm -rf x",
            "$(echo docker) ps",
            "./docker ps",
            "",
        ] {
            assert!(!config.excludes(line), "{line}");
        }
        assert!(!SandboxConfig::default().excludes("docker ps"));
    }
}
