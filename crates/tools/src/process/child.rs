//! What a tool's child process does between fork (or clone) and exec.
//!
//! troupe is multithreaded, so after `fork` only async-signal-safe calls are allowed in the
//! child: no allocation, no locks. Everything that needs more (opening paths, building the
//! Landlock ruleset, the mount plan, the seccomp program) happens in troupe before the fork; the
//! child makes plain system calls only.

use crate::sandbox::{ChildPlan, Confinement};
use std::io;

/// Makes `cmd`'s child die with troupe (parent-death signal) and, with a `confinement`, confine
/// itself before it executes the program: its mount namespace, then Landlock, then the seccomp
/// filter. All three are inherited by everything the program starts; the parent-death signal is
/// not (it covers the shell only).
///
/// The kernel sends the parent-death signal when the *thread* that forked exits, so spawn from
/// a thread that lives as long as troupe (the main thread or an async runtime worker), never from
/// a short-lived blocking-pool thread.
pub fn setup_child(cmd: &mut std::process::Command, confinement: Option<&Confinement>) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid().as_raw_pid();
    let plan = confinement.and_then(Confinement::child_plan);
    // SAFETY: the closure runs in the forked child and only makes async-signal-safe system calls
    // (prctl, getppid, unshare, open/write/close, mount, syscall) on integers and on memory the
    // plan prepared before the fork; it allocates nothing and takes no locks (the Arc is only
    // read). The ruleset descriptor stays open in troupe until the spawn has returned.
    unsafe {
        cmd.pre_exec(move || confine_self(parent, plan.as_deref(), 0));
    }
}

/// The child's side, between fork (or clone) and exec: the parent-death signal, then the
/// sandbox. Errors make the spawn fail, so a command never runs unconfined by accident.
///
/// The system calls here stay direct `libc` calls, not rustix's wrappers: this runs in the
/// forked child of a multi-threaded process, where only async-signal-safe calls are allowed, and
/// keeping them raw keeps that audit to this one function (`landlock_restrict_self` has no rustix
/// wrapper at all).
///
/// `entered` are the namespaces the clone made the child in (see `MountPlan::clone_flags`).
pub(super) fn confine_self(
    parent: libc::pid_t,
    plan: Option<&ChildPlan>,
    entered: libc::c_int,
) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number; no memory is passed.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // The parent may have died before the signal was armed; then nobody would send it. (In a
    // PID namespace of its own the child sees no parent: troupe's cloning thread waits for its
    // exec, so it cannot have gone.)
    // SAFETY: getppid(2) has no preconditions.
    if entered & libc::CLONE_NEWPID == 0 && unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    let Some(plan) = plan else {
        return Ok(());
    };
    // Mounts first: Landlock forbids every mount once applied.
    if let Some(mounts) = &plan.mounts {
        mounts.apply(entered)?;
    }
    // Required by landlock_restrict_self for unprivileged callers, and it keeps setuid programs
    // from gaining rights the sandbox does not confine.
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes only integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: landlock_restrict_self takes a ruleset descriptor (valid: troupe holds it open
    // until after the fork) and flags; no memory is passed.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    plan.filter.apply()
}
