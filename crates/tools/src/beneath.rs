//! File-system calls made beneath the workspace root's directory handle, so that the kernel,
//! not a check made a moment earlier, refuses any path that leads outside the workspace.
//!
//! Every open goes through `openat2(2)` with `RESOLVE_BENEATH` (Linux 5.6 or later): `..` and
//! symlinks that stay beneath the root resolve as usual; one that would leave it fails with
//! `EXDEV`, whatever another process swapped in since the guard resolved the path. A write never
//! follows a symlink in its last component: its temporary file is created with `O_EXCL` in the
//! target's directory (itself opened beneath the root), fsynced, and renamed over the name in
//! that same directory, which is then fsynced too.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

/// How a path is resolved beneath the root: never above it, never through `/proc` magic links.
#[cfg(target_os = "linux")]
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// How many times an open is retried when the kernel reports a concurrent rename (`EAGAIN`).
const RACE_RETRIES: usize = 64;

/// Whether a write may create the directories its target lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    /// Create missing directories, one at a time beneath the root (write_file).
    Create,
    /// The directory must already exist (edit_file).
    MustExist,
}

/// Why an operation beneath the root failed in a way the caller words itself.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The path led outside the root when the kernel resolved it.
    Escaped,
    /// The kernel cannot open beneath a directory (`openat2` is missing or filtered out).
    Unsupported,
    /// Any other error, as the file system reported it.
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(err: io::Error) -> Self {
        Failure::Io(err)
    }
}

impl From<Errno> for Failure {
    fn from(errno: Errno) -> Self {
        match errno {
            Errno::XDEV => Failure::Escaped,
            Errno::NOSYS => Failure::Unsupported,
            other => Failure::Io(other.into()),
        }
    }
}

/// Opens the workspace root as the directory handle everything else is resolved beneath.
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens `relative` (a path without a leading `/`; empty for the root itself) beneath `root`.
pub(crate) fn open(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
) -> Result<OwnedFd, Failure> {
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let mut attempts = 0;
    loop {
        match openat2(root, relative, flags | OFlags::CLOEXEC, Mode::empty()) {
            // The kernel saw a rename while resolving `..` and could not vouch for the result.
            Err(Errno::AGAIN) if attempts < RACE_RETRIES => attempts += 1,
            result => return result.map_err(Failure::from),
        }
    }
}

/// Opens an existing file for reading beneath `root`: a regular file, or `IsADirectory`.
///
/// `O_NONBLOCK` keeps a FIFO swapped in for the file from blocking the open; anything that is
/// not a regular file or a directory is refused.
pub(crate) fn open_for_reading(root: BorrowedFd<'_>, relative: &Path) -> Result<File, Failure> {
    let flags = OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK;
    let file = File::from(open(root, relative, flags)?);
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Err(Failure::Io(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    if !kind.is_file() {
        return Err(Failure::Io(io::Error::other("it is not a regular file")));
    }
    Ok(file)
}

/// Opens a handle for looking at `relative` (its metadata) without reading it.
pub(crate) fn open_path(root: BorrowedFd<'_>, relative: &Path) -> Result<File, Failure> {
    Ok(File::from(open(root, relative, LOOK)?))
}

/// Flags for a handle that only looks: `O_PATH` needs no read permission and opens nothing.
#[cfg(target_os = "linux")]
const LOOK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const LOOK: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK);

/// Opens the directory `relative` beneath `root` for creating entries in it, creating it and
/// any missing ancestors first when `parents` allows.
pub(crate) fn open_dir(
    root: BorrowedFd<'_>,
    relative: &Path,
    parents: Parents,
) -> Result<OwnedFd, Failure> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY;
    match (open(root, relative, flags), parents) {
        (Err(Failure::Io(err)), Parents::Create) if err.kind() == io::ErrorKind::NotFound => {}
        (result, _) => return result,
    }
    // Step by step: each directory is made with mkdirat in its parent's handle (which never
    // follows a symlink in the new name), then opened again beneath the root like any path.
    let mut prefix = std::path::PathBuf::new();
    let mut current = open(root, &prefix, flags)?;
    for component in relative.components() {
        let Component::Normal(name) = component else {
            // The guard hands over canonical paths; anything else is not ours to interpret.
            return Err(Failure::Io(io::Error::other(
                "a directory to create is not a plain name",
            )));
        };
        prefix.push(name);
        current = match open(root, &prefix, flags) {
            Err(Failure::Io(err)) if err.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&current, name, Mode::from_bits_truncate(0o777)) {
                    // Someone else made it meanwhile; opening it below still checks it.
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(errno.into()),
                }
                open(root, &prefix, flags)?
            }
            result => result?,
        };
    }
    Ok(current)
}

/// What stood at a write's target before it was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Previous {
    /// Nothing: the file was created.
    Nothing,
    /// A regular file of this many bytes.
    File(u64),
}

/// Replaces `name` in `dir` with `content` atomically (temp file, fsync, rename, fsync of the
/// directory), keeping an existing file's permission bits.
pub(crate) fn replace(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    content: &[u8],
) -> Result<Previous, Failure> {
    let (previous, mode) = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                return Err(Failure::Io(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "it is a directory",
                )))
            }
            FileType::RegularFile => (
                Previous::File(u64::try_from(stat.st_size).unwrap_or(0)),
                Some(Mode::from_raw_mode(stat.st_mode) & Mode::from_bits_truncate(0o777)),
            ),
            // A symlink (or anything else) is replaced itself, never followed.
            _ => (Previous::Nothing, None),
        },
        Err(Errno::NOENT) => (Previous::Nothing, None),
        Err(errno) => return Err(errno.into()),
    };
    let temp = temp_name(name);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = File::from(rustix::fs::openat(
        dir,
        &temp,
        flags,
        Mode::from_bits_truncate(0o666),
    )?);
    let result = write_then_rename(dir, file, &temp, name, content, mode);
    if result.is_err() {
        // Best effort: the temp file is ours and useless now.
        let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
    }
    result.map(|()| previous)
}

/// A hidden, unique name for the temporary file beside `name`.
fn temp_name(name: &OsStr) -> String {
    format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        troupe_protocol::ids::new_ulid()
    )
}

/// The steps of [`replace`] after the temp file exists.
fn write_then_rename(
    dir: BorrowedFd<'_>,
    mut file: File,
    temp: &str,
    name: &OsStr,
    content: &[u8],
    mode: Option<Mode>,
) -> Result<(), Failure> {
    file.write_all(content)?;
    if let Some(mode) = mode {
        // A script stays executable.
        rustix::fs::fchmod(&file, mode)?;
    }
    file.sync_all()?;
    drop(file);
    rustix::fs::renameat(dir, temp, dir, name)?;
    // Make the rename itself durable; a file system that cannot fsync a directory is no error.
    let _ = rustix::fs::fsync(dir.as_fd());
    Ok(())
}

/// `openat2(dirfd, path, how)` with `RESOLVE_BENEATH`.
#[cfg(target_os = "linux")]
fn openat2(
    dirfd: BorrowedFd<'_>,
    path: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(dirfd, path, flags, mode, BENEATH)
}

/// Elsewhere there is no `openat2`: report it as missing, so every file tool fails closed.
#[cfg(not(target_os = "linux"))]
fn openat2(_: BorrowedFd<'_>, _: &Path, _: OFlags, _: Mode) -> Result<OwnedFd, Errno> {
    Err(Errno::NOSYS)
}
