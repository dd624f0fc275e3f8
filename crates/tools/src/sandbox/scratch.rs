//! The private temporary directory of one confined call: created empty and owner-only, handed
//! to the command as `TMPDIR`, deleted with everything in it when the call is over.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// A per-call temporary directory, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Creates a fresh directory under the system temporary directory.
    pub fn create() -> io::Result<Scratch> {
        let base = std::env::temp_dir();
        let path = base.join(format!("troupe-call-{}", troupe_protocol::ids::new_ulid()));
        // Owner-only, and `create` (not `create_dir_all`) so an existing path is an error.
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        // Canonical, so Landlock and the command see the same path (`/tmp` may be a symlink).
        let path = path.canonicalize()?;
        Ok(Scratch { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove(&self.path);
    }
}

/// Removes a directory and everything in it, opening up directories a command left unwritable.
fn remove(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() {
        return;
    }
    make_removable(path);
    if let Err(err) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), error = %err, "removing a call's temporary directory");
    }
}

/// Directories handed to the remover and not yet removed.
static PENDING: Mutex<usize> = Mutex::new(0);
static REMOVED: Condvar = Condvar::new();

/// Removes `scratch` on a background thread, once its call is over: removing a directory can
/// take milliseconds (a filesystem mounted with `discard` trims the freed block right away), and
/// the call's result need not wait for it. [`wait_retired`] waits for the removals.
pub fn retire(scratch: Scratch) {
    static REMOVER: OnceLock<Mutex<Option<Sender<Scratch>>>> = OnceLock::new();
    let remover = REMOVER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Scratch>();
        let started = std::thread::Builder::new()
            .name("troupe-scratch".into())
            .spawn(move || {
                for scratch in rx {
                    drop(scratch);
                    if let Ok(mut pending) = PENDING.lock() {
                        *pending = pending.saturating_sub(1);
                    }
                    REMOVED.notify_all();
                }
            });
        Mutex::new(started.ok().map(|_| tx))
    });
    let sender = remover.lock().ok().and_then(|s| s.clone());
    if let Ok(mut pending) = PENDING.lock() {
        *pending += 1;
    }
    let unsent = match sender {
        Some(sender) => sender.send(scratch).err().map(|mpsc::SendError(s)| s),
        None => Some(scratch),
    };
    if let Some(scratch) = unsent {
        // No remover thread: remove it here.
        drop(scratch);
        if let Ok(mut pending) = PENDING.lock() {
            *pending = pending.saturating_sub(1);
        }
    }
}

/// Waits (up to `limit`) until every retired directory is removed; for when troupe exits.
pub fn wait_retired(limit: Duration) {
    let Ok(pending) = PENDING.lock() else {
        return;
    };
    let _ = REMOVED.wait_timeout_while(pending, limit, |pending| *pending > 0);
}

/// Gives the owner full access to every directory below `dir`, so its entries can be removed.
fn make_removable(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_removable(&entry.path());
        }
    }
}
