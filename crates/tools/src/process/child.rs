//! What a tool's child process does between fork and exec.
//!
//! troupe is multithreaded, so after `fork` only async-signal-safe calls are allowed in the
//! child: no allocation, no locks. Everything that needs more (opening paths, building the
//! Landlock ruleset) happens in troupe before the fork; the child makes plain system calls only.

use std::io;
use std::os::fd::RawFd;

/// Makes `cmd`'s child die with troupe (parent-death signal) and, with `ruleset`, confine itself
/// with that Landlock ruleset before it executes the program. The ruleset is inherited by
/// everything the program starts; the parent-death signal is not (it covers the shell only).
///
/// The kernel sends the parent-death signal when the *thread* that forked exits, so spawn from
/// a thread that lives as long as troupe (the main thread or an async runtime worker), never from
/// a short-lived blocking-pool thread.
pub fn setup_child(cmd: &mut std::process::Command, ruleset: Option<RawFd>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid(2) has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child and only makes async-signal-safe system calls
    // (prctl, getppid, syscall) on integers captured by value; it allocates nothing and takes no
    // locks. `ruleset` stays open in troupe until the spawn has returned.
    unsafe {
        cmd.pre_exec(move || in_child(parent, ruleset));
    }
}

/// The child's side. Errors make the spawn fail, so a command never runs unconfined by accident.
fn in_child(parent: libc::pid_t, ruleset: Option<RawFd>) -> io::Result<()> {
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
    // The parent may have died before the signal was armed; then nobody would send it.
    // SAFETY: getppid(2) has no preconditions.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    let Some(fd) = ruleset else {
        return Ok(());
    };
    // Required by landlock_restrict_self for unprivileged callers, and it keeps setuid programs
    // from gaining rights the sandbox does not confine.
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes only integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: landlock_restrict_self takes a ruleset descriptor (valid: troupe holds it open
    // until after the fork) and flags; no memory is passed.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
