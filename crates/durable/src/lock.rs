//! Exclusive and shared advisory locks (std `File::lock`, i.e. `flock`) as RAII guards.
//!
//! `flock` locks belong to an open file description, so two handles opened separately conflict
//! even inside one process: threads and processes are excluded alike.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::DurableError;

/// Holds a lock on a borrowed file until dropped.
#[derive(Debug)]
pub struct LockGuard<'a> {
    file: &'a File,
}

impl<'a> LockGuard<'a> {
    /// Blocks until this process holds the exclusive lock on `file`.
    pub fn exclusive(file: &'a File, path: &Path) -> Result<LockGuard<'a>, DurableError> {
        file.lock().map_err(DurableError::io("lock", path))?;
        Ok(LockGuard { file })
    }

    /// Blocks until this process holds a shared (reader) lock on `file`.
    pub fn shared(file: &'a File, path: &Path) -> Result<LockGuard<'a>, DurableError> {
        file.lock_shared()
            .map_err(DurableError::io("lock (shared)", path))?;
        Ok(LockGuard { file })
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // Closing the file would release the lock too; unlocking early keeps waiters short,
        // and an unlock error cannot be acted on here.
        let _ = self.file.unlock();
    }
}

/// An exclusive lock on a dedicated lock file (such as `roster.lock`), held until dropped.
#[derive(Debug)]
pub struct LockFile {
    file: File,
}

impl LockFile {
    /// Creates the lock file if needed and blocks until the exclusive lock is held.
    pub fn acquire(path: &Path) -> Result<LockFile, DurableError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(DurableError::io("open lock file", path))?;
        file.lock().map_err(DurableError::io("lock", path))?;
        Ok(LockFile { file })
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::TryLockError;

    #[test]
    fn lock_excludes_other_handles_until_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("x.lock");
        let held = LockFile::acquire(&path).unwrap_or_else(|e| panic!("{e}"));
        let other = File::open(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(held);
        assert!(other.try_lock().is_ok());
    }

    #[test]
    fn guard_releases_on_drop() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log");
        let a = File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        let b = File::open(&path).unwrap_or_else(|e| panic!("{e}"));
        {
            let _g = LockGuard::exclusive(&a, &path).unwrap_or_else(|e| panic!("{e}"));
            assert!(matches!(b.try_lock_shared(), Err(TryLockError::WouldBlock)));
        }
        assert!(b.try_lock_shared().is_ok());
    }
}
