//! A child started by [`MarkedCommand`](super::MarkedCommand): waited for through a pidfd on
//! the async runtime, and reaped even when nobody waits for it.

use rustix::io::Errno;
use rustix::process::{pidfd_open, waitpid, Pid, PidfdFlags, WaitOptions};
use std::io;
use std::os::fd::OwnedFd;
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
        let in_runtime = tokio::runtime::Handle::try_current().is_ok();
        // Outside a runtime there is nothing to register the descriptor with: it is closed.
        let pidfd = Pid::from_raw(pid)
            .and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok())
            .filter(|_| in_runtime)
            .and_then(|fd| {
                // SAFETY: an OwnedFd stays open and the same descriptor while the AsyncFd owns it.
                unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
            });
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
    let pid = own_child(pid)?;
    loop {
        match waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(None) => return Ok(None),
            Ok(Some((_, status))) => return Ok(Some(ExitStatus::from_raw(status.as_raw()))),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits for `pid` to exit and reaps it.
fn reap_blocking(pid: libc::pid_t) -> io::Result<ExitStatus> {
    let pid = own_child(pid)?;
    loop {
        match waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(ExitStatus::from_raw(status.as_raw())),
            // Without NOHANG waitpid returns only with a status; no status means no child.
            Ok(None) => return Err(Errno::CHILD.into()),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `pid` as rustix takes it; a pid that cannot be a child's (zero or negative) is no child.
fn own_child(pid: libc::pid_t) -> io::Result<Pid> {
    Pid::from_raw(pid)
        .filter(|p| !p.is_init())
        .ok_or_else(|| Errno::CHILD.into())
}
