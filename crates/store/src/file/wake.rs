//! Cross-process wake-ups: a Unix datagram socket per agent; an append sends it one byte.
//!
//! The socket normally lives at `inbox/<agent>.wake`. Unix socket paths are limited to 108
//! bytes (`sun_path`, NUL included), so for deep workspaces the socket is bound instead at
//! `/tmp/troupe-<hash>/<agent>.wake`, where `<hash>` is the FNV-1a hash of the full inbox
//! directory path: sender and listener compute the same place with no shared record.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::error::StoreError;
use crate::Watch;

/// Longest socket path that fits `sun_path` with its terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Where the agent's wake socket lives (see the module docs for the long-path fallback).
pub fn socket_path(inbox_dir: &Path, agent: &str) -> PathBuf {
    let natural = inbox_dir.join(format!("{agent}.wake"));
    if natural.as_os_str().len() <= MAX_SOCKET_PATH {
        return natural;
    }
    fallback_dir(inbox_dir).join(format!("{agent}.wake"))
}

fn fallback_dir(inbox_dir: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    // FNV-1a: tiny, stable across Rust releases (std's hasher is not guaranteed to be).
    let hash = inbox_dir
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    PathBuf::from(format!("/tmp/troupe-{hash:016x}"))
}

/// Binds the agent's wake socket, replacing a stale one left by a dead listener.
pub fn bind(inbox_dir: &Path, agent: &str) -> Result<UnixDatagram, StoreError> {
    let path = socket_path(inbox_dir, agent);
    if let Some(parent) = path.parent() {
        if !parent.starts_with(inbox_dir) {
            // The fallback directory is shared /tmp: keep it private to this user.
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(StoreError::io("create wake directory", parent))?;
            let _ = fs::set_permissions(parent, fs::Permissions::from_mode(0o700));
        }
    }
    match fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(StoreError::io("remove stale wake socket", &path)(e)),
    }
    UnixDatagram::bind(&path).map_err(StoreError::io("bind wake socket", &path))
}

/// A bound wake socket as a [`Watch`]: datagrams queue in the kernel while nobody waits, so
/// a wake sent between a check and the wait is never lost.
#[derive(Debug)]
pub struct SocketWatch {
    socket: tokio::net::UnixDatagram,
}

impl SocketWatch {
    /// Binds the agent's wake socket (see [`bind`]). Must be called inside a tokio runtime.
    pub fn bind(inbox_dir: &Path, agent: &str) -> Result<SocketWatch, StoreError> {
        let path = socket_path(inbox_dir, agent);
        let socket = bind(inbox_dir, agent)?;
        socket
            .set_nonblocking(true)
            .map_err(StoreError::io("configure wake socket", &path))?;
        let socket = tokio::net::UnixDatagram::from_std(socket)
            .map_err(StoreError::io("register wake socket", &path))?;
        Ok(SocketWatch { socket })
    }
}

#[async_trait]
impl Watch for SocketWatch {
    async fn changed(&mut self) {
        let mut buf = [0u8; 16];
        if let Err(e) = self.socket.recv(&mut buf).await {
            // A broken socket must not turn every waiter into a busy loop; the caller
            // re-checks the store after any wake, so a short pause is safe.
            tracing::warn!(error = %e, "wake socket failed; waking after a short pause");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        // Several appends may have queued several datagrams: one wake covers them all.
        while self.socket.try_recv(&mut buf).is_ok() {}
    }
}

/// Sends one wake byte, ignoring every failure: no listener, a full queue or a missing socket
/// only mean nobody is waiting right now, and the mail is already durable.
pub fn send(waker: Option<&UnixDatagram>, inbox_dir: &Path, agent: &str) {
    let Some(sock) = waker else { return };
    let path = socket_path(inbox_dir, agent);
    if let Err(e) = sock.send_to(&[1], &path) {
        tracing::trace!(agent, error = %e, "wake not delivered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_fall_back_to_a_stable_short_dir() {
        let short = Path::new("/w/.troupe/teams/t/inbox");
        assert_eq!(socket_path(short, "a"), short.join("a.wake"));
        let long = PathBuf::from(format!("/{}/inbox", "d".repeat(120)));
        let p = socket_path(&long, "alice");
        assert!(p.as_os_str().len() <= MAX_SOCKET_PATH);
        assert!(p.starts_with("/tmp"));
        assert_eq!(p, socket_path(&long, "alice"));
        let other = PathBuf::from(format!("/{}/inbox", "e".repeat(120)));
        assert_ne!(p.parent(), socket_path(&other, "alice").parent());
    }
}
