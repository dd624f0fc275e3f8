//! Where a confined command may write, per level.
//!
//! Read-only: device files that discard or produce bytes, and the call's private temporary
//! directory. Workspace-write adds the workspace, the roots named in settings, and the package
//! caches of common build tools.
//!
//! Why the caches: `cargo build` and `npm install` into the workspace must work when a person
//! allowed them, and both write their download caches under the home directory
//! (`~/.cargo/registry`, `~/.cargo/git`, cargo's lock and tracking files, `~/.npm`) or the XDG
//! cache (`~/.cache`: pip, go-build, yarn and many more). The price is that an allowed command can
//! change what a later build reads from those caches; a command the person allowed could do more
//! harm in the workspace itself, so the caches add little. What the caches do not include, on
//! purpose: `~/.cargo/bin`, `~/.cargo/config*`, `~/.rustup`, shell start-up files, `~/.ssh`,
//! `~/.config` — writing any of these changes what runs outside the sandbox later.

use super::{Sandbox, SandboxConfig};
use std::fmt;
use std::path::{Path, PathBuf};

/// Device files every confined command may write: sinks and sources of bytes, never a terminal.
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Why a path is writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritableKind {
    /// A device file (`/dev/null`, …).
    Device,
    /// The call's private temporary directory (`$TMPDIR`), deleted after the call.
    Scratch,
    /// The workspace root.
    Workspace,
    /// A root named in settings (`sandbox.writableRoots`).
    Configured,
    /// A build tool's package cache.
    Cache,
}

impl WritableKind {
    /// A short label for listings.
    pub fn as_str(self) -> &'static str {
        match self {
            WritableKind::Device => "device",
            WritableKind::Scratch => "private temporary directory",
            WritableKind::Workspace => "workspace",
            WritableKind::Configured => "writable root from settings",
            WritableKind::Cache => "package cache",
        }
    }
}

impl fmt::Display for WritableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One path a confined command may write beneath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writable {
    /// The path (a directory, or a single file for devices and lock files).
    pub path: PathBuf,
    /// Why it is writable.
    pub kind: WritableKind,
}

/// The writable paths of `level` for a call in `workspace` whose temporary directory is
/// `scratch`. Paths that do not exist are left out (Landlock rules name existing files).
pub fn writable_paths(
    level: Sandbox,
    workspace: &Path,
    scratch: Option<&Path>,
    config: &SandboxConfig,
) -> Vec<Writable> {
    let mut out = Vec::new();
    if level == Sandbox::Unsandboxed {
        return out;
    }
    let mut add = |path: PathBuf, kind: WritableKind| {
        if path.exists() && !out.iter().any(|w: &Writable| w.path == path) {
            out.push(Writable { path, kind });
        }
    };
    for device in DEVICES {
        add(PathBuf::from(device), WritableKind::Device);
    }
    if let Some(scratch) = scratch {
        add(scratch.to_path_buf(), WritableKind::Scratch);
    }
    if level == Sandbox::ReadOnly {
        return out;
    }
    add(workspace.to_path_buf(), WritableKind::Workspace);
    for root in &config.writable_roots {
        add(root.clone(), WritableKind::Configured);
    }
    for cache in cache_paths() {
        add(cache, WritableKind::Cache);
    }
    out
}

/// The package caches of cargo, npm and the XDG cache directory, from the environment troupe
/// runs in (which its commands inherit).
fn cache_paths() -> Vec<PathBuf> {
    let env = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let mut out = Vec::new();
    if let Some(cargo) = env("CARGO_HOME").or_else(|| under_home(".cargo")) {
        for entry in [
            "registry",
            "git",
            ".package-cache",
            ".package-cache-mutate",
            ".global-cache",
        ] {
            out.push(cargo.join(entry));
        }
    }
    out.extend(env("npm_config_cache").or_else(|| under_home(".npm")));
    out.extend(env("XDG_CACHE_HOME").or_else(|| under_home(".cache")));
    out
}
