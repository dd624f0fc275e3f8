//! The glob tool's walk: the regular files a walker yields, with their modification times,
//! each looked at in its directory's handle without following a link.

use crate::walk::{self, DirHandle, KeepFile, Visit};
use crate::Tree;
use globset::GlobMatcher;
use ignore::WalkBuilder;
use rustix::fs::{AtFlags, FileType};
use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Keeps the files whose path relative to `base` matches `matcher`. Matched where the walker
/// reads each directory, before a file is handed to a thread as work (as ripgrep's `-g` does):
/// the files it does not match, most of a tree, cost no more than their directory entry.
pub fn matching(base: &Path, matcher: GlobMatcher) -> KeepFile {
    let base = base.as_os_str().as_bytes().to_vec();
    Box::new(move |path: &Path| {
        relative(path.as_os_str().as_bytes(), &base)
            .is_some_and(|rel| matcher.is_match(Path::new(OsStr::from_bytes(rel))))
    })
}

/// `path` relative to `base` (both absolute, as bytes), if it lies beneath it.
fn relative<'a>(path: &'a [u8], base: &[u8]) -> Option<&'a [u8]> {
    let rest = path.strip_prefix(base)?;
    match rest.first() {
        None => Some(rest),
        Some(b'/') => Some(&rest[1..]),
        Some(_) if base.ends_with(b"/") => Some(rest),
        Some(_) => None,
    }
}

/// The regular files `builder` yields in `tree`, the `shown` newest first (see
/// [`newest_first`]).
pub fn newest_files(
    builder: WalkBuilder,
    tree: &dyn Tree,
    shown: usize,
) -> Vec<(SystemTime, PathBuf)> {
    let (mut found, _) = walk::files(builder, || {
        // Each directory is opened beneath the root handle once (the walker hands a thread a
        // directory's files together), and its files are looked at in that handle without
        // following a link: a name the walker listed through a directory swapped for a symlink
        // meanwhile is dropped.
        let mut dirs = DirHandle::default();
        move |entry: ignore::DirEntry| {
            // The directory and the name on the path's bytes: `Path`'s own `parent` and
            // `file_name` parse its components.
            let path = entry.path().as_os_str().as_bytes();
            let Some(slash) = path.iter().rposition(|b| *b == b'/') else {
                return Visit::Skip;
            };
            let (dir, name) = (&path[..slash], &path[slash + 1..]);
            let Some(handle) = dirs.open(tree, Path::new(OsStr::from_bytes(dir))) else {
                return Visit::Skip;
            };
            let name = OsStr::from_bytes(name);
            match rustix::fs::statat(handle.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                    let modified = SystemTime::UNIX_EPOCH
                        + Duration::new(
                            u64::try_from(stat.st_mtime).unwrap_or(0),
                            u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
                        );
                    Visit::Keep((modified, entry.into_path()))
                }
                _ => Visit::Skip,
            }
        }
    });
    newest_first(&mut found, shown);
    found
}

/// Puts the `shown` newest of `found` first, newest first, ties by path (byte order) so the
/// order is stable; the rest stay behind them unsorted, as only their number is shown. Files
/// written together often share a modification time (the kernel's clock ticks coarsely), so
/// paths are compared often: as bytes, not component by component.
pub fn newest_first(found: &mut [(SystemTime, PathBuf)], shown: usize) {
    let order = |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.as_os_str().as_bytes().cmp(b.1.as_os_str().as_bytes()))
    };
    if found.len() > shown {
        found.select_nth_unstable_by(shown, order);
    }
    let head = found.len().min(shown);
    found[..head].sort_unstable_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_found_on_whole_components() {
        assert_eq!(relative(b"/ws/src/a.rs", b"/ws"), Some(&b"src/a.rs"[..]));
        assert_eq!(relative(b"/ws", b"/ws"), Some(&b""[..]));
        assert_eq!(relative(b"/wsx/a.rs", b"/ws"), None);
        assert_eq!(relative(b"/a.rs", b"/"), Some(&b"a.rs"[..]));
        assert_eq!(relative(b"/other/a.rs", b"/ws"), None);
    }

    #[test]
    fn the_newest_come_first_and_ties_go_by_path() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let mut found: Vec<(SystemTime, PathBuf)> = [
            (1, "/w/old"),
            (5, "/w/b"),
            (5, "/w/a"),
            (9, "/w/new"),
            (3, "/w/mid"),
        ]
        .into_iter()
        .map(|(s, p)| (at(s), PathBuf::from(p)))
        .collect();
        newest_first(&mut found, 3);
        let head: Vec<_> = found[..3]
            .iter()
            .map(|(_, p)| p.to_str().unwrap())
            .collect();
        assert_eq!(head, ["/w/new", "/w/a", "/w/b"]);
        assert_eq!(found.len(), 5);
        newest_first(&mut found, 10);
        let all: Vec<_> = found.iter().map(|(_, p)| p.to_str().unwrap()).collect();
        assert_eq!(all, ["/w/new", "/w/a", "/w/b", "/w/mid", "/w/old"]);
    }
}
