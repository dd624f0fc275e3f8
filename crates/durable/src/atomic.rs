//! Whole-file updates that nobody can observe half-done: temp file, fsync, rename, fsync dir.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::commit::{sync_now, SyncKind};
use crate::Durability;
use crate::DurableError;

/// Distinguishes temp files of concurrent writers inside one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` atomically: readers see the old file or the new one, never a
/// mix, and after a crash the file is one or the other (the rename is the commit point).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DurableError> {
    write_atomic_with(path, bytes, Durability::Fsync)
}

/// [`write_atomic`] with a choice of durability; `OsBuffered` skips the fsyncs (the rename is
/// still atomic, but a power loss may lose the update).
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> Result<(), DurableError> {
    write_atomic_by(path, bytes, durability, &mut |file, at, kind| {
        sync_now(&file, kind).map_err(DurableError::io("fsync", at))
    })
}

/// [`write_atomic_with`] with every sync done by `sync` (a store's group commit): the temp
/// file's before the rename, the directory's after it.
pub fn write_atomic_by(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
    sync: &mut dyn FnMut(File, &Path, SyncKind) -> Result<(), DurableError>,
) -> Result<(), DurableError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    // Hidden, and unique per process and call, so concurrent writers never share a temp file.
    let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let result = write_temp(&tmp, bytes)
        .and_then(|file| match durability {
            Durability::Fsync => sync(file, &tmp, SyncKind::Data),
            Durability::OsBuffered => Ok(()),
        })
        .and_then(|()| {
            fs::rename(&tmp, path).map_err(DurableError::io("rename temp file over", path))
        });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    if durability == Durability::Fsync {
        let handle = File::open(dir).map_err(DurableError::io("open directory", dir))?;
        sync(handle, dir, SyncKind::All)?;
    }
    Ok(())
}

fn write_temp(tmp: &Path, bytes: &[u8]) -> Result<File, DurableError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(DurableError::io("create temp file", tmp))?;
    file.write_all(bytes)
        .map_err(DurableError::io("write temp file", tmp))?;
    Ok(file)
}

/// Makes a rename or a new file in `dir` durable by fsyncing the directory itself.
pub fn sync_dir(dir: &Path) -> Result<(), DurableError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(DurableError::io("fsync directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("x.json");
        write_atomic(&path, b"one").unwrap_or_else(|e| panic!("{e}"));
        write_atomic(&path, b"two, longer").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fs::read(&path).unwrap_or_default(), b"two, longer");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.json")]);
    }

    #[test]
    fn failure_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // Renaming a file over a non-empty directory fails: the old "file" must survive.
        let path = dir.path().join("d");
        fs::create_dir(&path).unwrap_or_else(|e| panic!("{e}"));
        fs::write(path.join("keep"), b"k").unwrap_or_else(|e| panic!("{e}"));
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(fs::read(path.join("keep")).unwrap_or_default(), b"k");
        let count = fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0);
        assert_eq!(count, 1);
    }
}
