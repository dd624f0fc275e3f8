//! The private temporary directory of one confined call: created empty and owner-only, handed
//! to the command as `TMPDIR`, deleted with everything in it when the call is over.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A per-call temporary directory, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Creates a fresh directory under the system temporary directory.
    pub fn create() -> io::Result<Scratch> {
        let base = std::env::temp_dir();
        let path = base.join(format!("troupe-call-{}", ulid::Ulid::new()));
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
        if std::fs::remove_dir_all(&self.path).is_ok() {
            return;
        }
        // A command may have left a directory without write permission; open it up and retry.
        make_removable(&self.path);
        if let Err(err) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %err, "removing a call's temporary directory");
        }
    }
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
