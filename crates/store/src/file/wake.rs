//! Cross-process wake-ups: a Unix datagram socket per agent; an append sends it one byte.
//!
//! The socket is bound in Linux's abstract namespace, at `troupe/<hash>/<agent>` (`<hash>` the
//! FNV-1a hash of the inbox directory's path): it has no file, so a teammate's start creates
//! no inode for it and nothing is left to remove, and the kernel frees the name when its
//! listener closes (decision 0035). While a listener still holds the name (a member's new
//! listener before the old one is gone), the new one binds a file socket instead, at
//! `inbox/<agent>.wake`, as before, and a sender sends to both. Unix socket paths are limited
//! to 108 bytes (`sun_path`, NUL included), so for deep workspaces the file socket is bound at
//! `/tmp/troupe-<hash>/<agent>.wake` instead: sender and listener compute the same places with
//! no shared record.

use std::fs;
use std::io::ErrorKind;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::error::StoreError;
use crate::Watch;

/// Longest socket path that fits `sun_path` with its terminating NUL (an abstract name has no
/// NUL but a leading one: the same length).
const MAX_SOCKET_PATH: usize = 107;

/// Where the agent's file socket lives (see the module docs for the long-path fallback).
pub fn socket_path(inbox_dir: &Path, agent: &str) -> PathBuf {
    let natural = inbox_dir.join(format!("{agent}.wake"));
    if natural.as_os_str().len() <= MAX_SOCKET_PATH {
        return natural;
    }
    PathBuf::from(format!(
        "/tmp/troupe-{:016x}",
        fnv(inbox_dir.as_os_str().as_bytes())
    ))
    .join(format!("{agent}.wake"))
}

/// The agent's abstract socket name, without the leading NUL; an agent name too long for it
/// is hashed too.
pub fn abstract_name(inbox_dir: &Path, agent: &str) -> String {
    let dir = fnv(inbox_dir.as_os_str().as_bytes());
    let name = format!("troupe/{dir:016x}/{agent}");
    if name.len() <= MAX_SOCKET_PATH {
        return name;
    }
    format!("troupe/{dir:016x}/#{:016x}", fnv(agent.as_bytes()))
}

/// FNV-1a: tiny, stable across Rust releases (std's hasher is not guaranteed to be).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn abstract_addr(inbox_dir: &Path, agent: &str) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(abstract_name(inbox_dir, agent).as_bytes())
}

/// Binds the agent's wake socket: at its abstract name, or, while another listener holds that
/// name, at its file path (replacing a stale socket file left by a dead listener). A file
/// socket an earlier listener left is removed either way, so that it takes no wakes meant for
/// this one.
pub fn bind(inbox_dir: &Path, agent: &str) -> Result<UnixDatagram, StoreError> {
    let path = socket_path(inbox_dir, agent);
    let named = abstract_addr(inbox_dir, agent)
        .and_then(|addr| UnixDatagram::bind_addr(&addr))
        .map_err(|e| {
            tracing::debug!(agent, error = %e, "abstract wake name taken; binding a socket file");
        });
    if let Ok(socket) = named {
        remove_stale(&path)?;
        return Ok(socket);
    }
    bind_file(inbox_dir, &path)
}

/// Removes a socket file, if there is one.
fn remove_stale(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove stale wake socket", path)(e)),
    }
}

/// Binds the agent's socket file at `path`, replacing a stale one.
fn bind_file(inbox_dir: &Path, path: &Path) -> Result<UnixDatagram, StoreError> {
    if let Some(parent) = path.parent() {
        if parent.starts_with(inbox_dir) {
            // The inbox folder is made on first use: maybe not yet.
            fs::create_dir_all(parent).map_err(StoreError::io("create directory", parent))?;
        } else {
            // The fallback directory is shared /tmp: keep it private to this user.
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(StoreError::io("create wake directory", parent))?;
            let _ = fs::set_permissions(parent, fs::Permissions::from_mode(0o700));
        }
    }
    remove_stale(path)?;
    UnixDatagram::bind(path).map_err(StoreError::io("bind wake socket", path))
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

/// Sends one wake byte to the agent's abstract name and to its socket file, ignoring every
/// failure: no listener, a full queue or a missing socket only mean nobody is waiting there
/// right now, and the mail is already durable.
pub fn send(waker: Option<&UnixDatagram>, inbox_dir: &Path, agent: &str) {
    let Some(sock) = waker else { return };
    if let Err(e) = abstract_addr(inbox_dir, agent).and_then(|a| sock.send_to_addr(&[1], &a)) {
        tracing::trace!(agent, error = %e, "wake not delivered to the abstract name");
    }
    if let Err(e) = sock.send_to(&[1], socket_path(inbox_dir, agent)) {
        tracing::trace!(agent, error = %e, "wake not delivered to the socket file");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code may panic on a broken fixture
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

    /// Whether a wake byte is waiting on `socket` (it waits up to a second for one).
    fn woken(socket: &UnixDatagram) -> bool {
        let _ = socket.set_read_timeout(Some(std::time::Duration::from_secs(1)));
        socket.recv(&mut [0u8; 4]).is_ok()
    }

    #[test]
    fn a_listener_binds_no_file_and_is_woken_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let listener = bind(dir.path(), "alice").unwrap();
        assert!(
            !socket_path(dir.path(), "alice").exists(),
            "a socket file was made"
        );
        let sender = UnixDatagram::unbound().unwrap();
        send(Some(&sender), dir.path(), "alice");
        assert!(woken(&listener));
        // Another agent's wake does not reach it.
        send(Some(&sender), dir.path(), "bob");
        let _ = listener.set_nonblocking(true);
        assert!(listener.recv(&mut [0u8; 4]).is_err());
    }

    #[test]
    fn a_second_listener_binds_the_file_and_both_are_woken() {
        let dir = tempfile::tempdir().unwrap();
        let first = bind(dir.path(), "alice").unwrap();
        let second = bind(dir.path(), "alice").unwrap();
        assert!(socket_path(dir.path(), "alice").exists());
        let sender = UnixDatagram::unbound().unwrap();
        send(Some(&sender), dir.path(), "alice");
        assert!(woken(&second), "the newest listener missed the wake");
        assert!(woken(&first));
        // Once both are gone the name is free again, and the stale file is removed.
        drop((first, second));
        let third = bind(dir.path(), "alice").unwrap();
        assert!(!socket_path(dir.path(), "alice").exists());
        send(Some(&sender), dir.path(), "alice");
        assert!(woken(&third));
    }

    #[test]
    fn long_names_are_hashed_to_fit() {
        let dir = Path::new("/w/.troupe/teams/t/inbox");
        let long = "a".repeat(200);
        let name = abstract_name(dir, &long);
        assert!(name.len() <= MAX_SOCKET_PATH, "{name}");
        assert_eq!(name, abstract_name(dir, &long));
        assert_ne!(name, abstract_name(dir, &"b".repeat(200)));
        assert_ne!(
            abstract_name(dir, "alice"),
            abstract_name(Path::new("/v/.troupe/teams/t/inbox"), "alice")
        );
    }
}
