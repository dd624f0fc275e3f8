//! The OS sandbox under the permission rules: on Linux, Landlock confines every process a bash
//! call starts (children inherit it; nothing inside can lift it).
//!
//! The level comes from why the call was allowed: allowed only because it was judged read-only
//! → [`Sandbox::ReadOnly`]; allowed by a rule or a person → [`Sandbox::WorkspaceWrite`];
//! `bypassPermissions` → [`Sandbox::Unsandboxed`]. See [`paths`] for what each level may write.

pub mod paths;
mod ruleset;
mod scratch;
mod support;

pub use paths::{writable_paths, Writable, WritableKind};
pub use scratch::{retire, wait_retired, Scratch};
pub use support::{kernel_abi, support, Support, FORCE_UNSUPPORTED_ENV, MIN_ABI};

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

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
}

impl SandboxConfig {
    /// The level a call actually runs at, given the level its permission asked for.
    pub fn effective(&self, wanted: Sandbox) -> Sandbox {
        match self.mode {
            SandboxMode::Auto => wanted,
            SandboxMode::Off => Sandbox::Unsandboxed,
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
}

/// Everything one call's confinement needs, prepared before the command is spawned.
#[derive(Debug)]
pub struct Confinement {
    level: Sandbox,
    scratch: Option<Scratch>,
    ruleset: Option<OwnedFd>,
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
            });
        }
        if let Support::Unsupported { why } = support() {
            return Err(SandboxError::Unsupported(why.clone()));
        }
        let scratch = Scratch::create().map_err(SandboxError::Scratch)?;
        let writable = writable_paths(level, workspace, Some(scratch.path()), config);
        let ruleset = ruleset::build(level, &writable)?;
        Ok(Confinement {
            level,
            scratch: Some(scratch),
            ruleset: Some(ruleset),
        })
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
