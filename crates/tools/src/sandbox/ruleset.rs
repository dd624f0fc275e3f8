//! The Landlock ruleset of one confined call, built in troupe (which may allocate, open files and
//! fail politely) so that the forked child only has to make two system calls.
//!
//! The filesystem part is a hard requirement: every write right of ABI 3 is handled, so the
//! kernel refuses any write, truncation, creation, removal, rename or link outside the rules.
//! Newer rights are added where the kernel has them, on a best-effort basis: device ioctls
//! (ABI 5) for every confined call, and for read-only calls also TCP bind/connect (ABI 4) and
//! the signal and abstract-socket scopes (ABI 6), so a read-only command cannot talk to a server
//! or signal a process outside its sandbox.

use super::paths::{Writable, WritableKind};
use super::{Sandbox, SandboxError};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::OwnedFd;

/// The ABI whose filesystem rights must all be enforced (see `support::MIN_ABI`).
const REQUIRED_FS_ABI: ABI = ABI::V3;
/// The newest ABI whose extra rights troupe asks for where the kernel has them.
const WANTED_ABI: ABI = ABI::V6;

/// Builds the ruleset for `level` with `writable` paths and returns its file descriptor, ready
/// for `landlock_restrict_self` in the child.
pub(crate) fn build(level: Sandbox, writable: &[Writable]) -> Result<OwnedFd, SandboxError> {
    let required = AccessFs::from_all(REQUIRED_FS_ABI);
    let wanted = AccessFs::from_all(WANTED_ABI);
    let read = AccessFs::from_read(REQUIRED_FS_ABI);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(required)
        .map_err(landlock_error)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(wanted)
        .map_err(landlock_error)?;
    if level == Sandbox::ReadOnly {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(WANTED_ABI))
            .map_err(landlock_error)?
            .scope(Scope::from_all(WANTED_ABI))
            .map_err(landlock_error)?;
    }
    let mut created = ruleset
        .create()
        .map_err(landlock_error)?
        .set_compatibility(CompatLevel::HardRequirement)
        .add_rule(PathBeneath::new(open("/")?, read))
        .map_err(landlock_error)?
        .set_compatibility(CompatLevel::BestEffort);
    for entry in writable {
        let access: BitFlags<AccessFs> = match entry.kind {
            WritableKind::Device => {
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
            }
            WritableKind::Scratch
            | WritableKind::Workspace
            | WritableKind::Configured
            | WritableKind::Cache => {
                if entry.path.is_dir() {
                    wanted
                } else {
                    AccessFs::from_file(WANTED_ABI)
                }
            }
        };
        created = created
            .add_rule(PathBeneath::new(open(&entry.path)?, access))
            .map_err(landlock_error)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| {
        SandboxError::Unsupported("the kernel did not create a Landlock ruleset".into())
    })
}

fn open(path: impl AsRef<std::path::Path>) -> Result<PathFd, SandboxError> {
    PathFd::new(path).map_err(landlock_error)
}

fn landlock_error(err: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(err.to_string())
}
