//! A child started by [`MarkedCommand`](super::MarkedCommand): waited for through a pidfd on
//! the async runtime, and reaped even when nobody waits for it.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

/// A running (or finished, not yet waited for) marked child.
#[derive(Debug)]
pub struct MarkedChild {
    pid: libc::pid_t,
    /// Readable once the child has exited; `None` on a kernel without pidfds, where a
    /// blocking-pool thread waits instead.
    pidfd: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    /// Troupe's end of the child's stdin, when piped.
    pub stdin: Option<pipe::Sender>,
    /// Troupe's end of the child's stdout, when piped.
    pub stdout: Option<pipe::Receiver>,
    /// Troupe's end of the child's stderr, when piped.
    pub stderr: Option<pipe::Receiver>,
}

impl MarkedChild {
    /// The child `pid` just started; its pipes are set by the caller.
    pub(super) fn new(pid: libc::pid_t) -> MarkedChild {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
        let in_runtime = tokio::runtime::Handle::try_current().is_ok();
        let pidfd = match fd {
            // SAFETY: a descriptor pidfd_open just returned, owned by nobody else; the AsyncFd
            // owns it (it stays open, the same descriptor) until the AsyncFd is dropped.
            fd if fd >= 0 && in_runtime => unsafe {
                AsyncFd::register_with_interest(
                    OwnedFd::from_raw_fd(fd as libc::c_int),
                    Interest::READABLE,
                )
                .ok()
            },
            fd if fd >= 0 => {
                // SAFETY: closes the descriptor pidfd_open just returned, once.
                unsafe { libc::close(fd as libc::c_int) };
                None
            }
            _ => None,
        };
        MarkedChild {
            pid,
            pidfd,
            status: None,
            stdin: None,
            stdout: None,
            stderr: None,
        }
    }

    /// The child's pid (the leader of its process group).
    pub fn id(&self) -> Option<u32> {
        u32::try_from(self.pid).ok()
    }

    /// Waits until the child exits and reaps it. Cancel-safe: a dropped wait loses nothing.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let pid = self.pid;
        let status = match &self.pidfd {
            Some(pidfd) => loop {
                let mut ready = pidfd.readable().await?;
                if let Some(status) = try_reap(pid)? {
                    break status;
                }
                ready.clear_ready();
            },
            None => tokio::task::spawn_blocking(move || reap_blocking(pid))
                .await
                .map_err(io::Error::other)??,
        };
        self.status = Some(status);
        Ok(status)
    }
}

impl Drop for MarkedChild {
    /// A child nobody waited for is reaped when it exits: at once if it has, else on a thread
    /// that waits for it (its call's guard is killing it).
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        if let Ok(Some(_)) = try_reap(self.pid) {
            return;
        }
        let pid = self.pid;
        let _ = std::thread::Builder::new()
            .name("troupe-reap".into())
            .spawn(move || reap_blocking(pid));
    }
}

/// Reaps `pid` if it has exited.
fn try_reap(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own child with WNOHANG; `status` is a valid out pointer.
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            0 => return Ok(None),
            -1 => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
            _ => return Ok(Some(ExitStatus::from_raw(status))),
        }
    }
}

/// Waits for `pid` to exit and reaps it.
fn reap_blocking(pid: libc::pid_t) -> io::Result<ExitStatus> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own child; `status` is a valid out pointer.
        match unsafe { libc::waitpid(pid, &mut status, 0) } {
            -1 => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
            _ => return Ok(ExitStatus::from_raw(status)),
        }
    }
}
