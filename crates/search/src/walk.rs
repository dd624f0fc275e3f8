//! Walking a tree on every core, as ripgrep does: `ignore`'s parallel walker hands each entry to
//! one of its threads, where `visit` looks at it (reads, searches) and may keep a result. The
//! results come back in no particular order: callers sort them, so what a tool shows does not
//! depend on which thread finished first.

use crate::Tree;
use ignore::{DirEntry, WalkBuilder, WalkState};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Which files (anything not a directory) a walk yields, by path; directories are entered
/// whatever it says.
pub type KeepFile = Box<dyn Fn(&Path) -> bool + Send + Sync>;

/// What a walk must neither yield nor enter, by path.
pub type Hidden = Box<dyn Fn(&Path) -> bool + Send + Sync>;

/// A gitignore-aware walker over `base` that also sees dot-files but never enters the
/// directories named in `skipped` (below `base`), and does not need a git repository for
/// .gitignore to count; it yields only the files `keep` takes (if given) and neither yields nor
/// enters what `hidden` says (if given). Built here, so that the test it runs on every entry
/// is compiled with the walks.
///
/// It never follows symlinks (`follow_links(false)`: a symlink is yielded as a symlink and not
/// descended into), but it lists directories by path, so a directory swapped for a symlink
/// mid-walk can still be listed through it: the walks open every entry in its directory's
/// handle ([`DirHandle`]).
pub fn walker(
    base: &Path,
    skipped: &'static [&'static str],
    keep: Option<KeepFile>,
    hidden: Option<Hidden>,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            let dir = entry.file_type().is_some_and(|t| t.is_dir());
            let skip = match dir {
                true => {
                    entry.depth() > 0 && skipped.iter().any(|n| entry.file_name() == OsStr::new(n))
                }
                false => keep.as_ref().is_some_and(|keep| !keep(entry.path())),
            };
            !skip && !hidden.as_ref().is_some_and(|hidden| hidden(entry.path()))
        });
    builder
}

/// What one visit says.
pub enum Visit<T> {
    /// Nothing to keep.
    Skip,
    /// Keep this result.
    Keep(T),
    /// Keep this result and stop the walk (enough was found).
    KeepAndStop(T),
}

/// Walks `builder`'s tree on every core, calling `make_visitor()` once per thread and the visitor
/// once per file (directories and errors are skipped); returns what the visits kept and whether
/// one of them stopped the walk early.
pub fn files<T, V>(mut builder: WalkBuilder, make_visitor: impl Fn() -> V + Sync) -> (Vec<T>, bool)
where
    T: Send,
    V: FnMut(DirEntry) -> Visit<T> + Send,
{
    let kept: Mutex<Vec<T>> = Mutex::new(Vec::new());
    let stopped = AtomicBool::new(false);
    builder.threads(0).build_parallel().run(|| {
        let mut visit = make_visitor();
        let stopped = &stopped;
        let mut mine = Batch {
            found: Vec::new(),
            kept: &kept,
        };
        Box::new(move |entry| {
            if stopped.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let state = match visit(entry) {
                Visit::Skip => return WalkState::Continue,
                Visit::Keep(found) => {
                    mine.found.push(found);
                    WalkState::Continue
                }
                Visit::KeepAndStop(found) => {
                    mine.found.push(found);
                    stopped.store(true, Ordering::Relaxed);
                    WalkState::Quit
                }
            };
            // Handed over in batches: one lock per 64 results, not per file.
            if mine.found.len() >= 64 {
                mine.flush();
            }
            state
        })
    });
    let found = match kept.into_inner() {
        Ok(found) => found,
        Err(poisoned) => poisoned.into_inner(),
    };
    (found, stopped.into_inner())
}

/// The directories one thread is looking into, opened by the [`Tree`] (beneath the workspace's root handle): the
/// last few only (the walker interleaves a directory's files with other work), so a thread holds
/// a handful of descriptors however many directories it visits.
#[derive(Default)]
pub struct DirHandle {
    open: Vec<(PathBuf, Option<OwnedFd>)>,
}

/// How many directory handles one thread keeps.
const KEPT_DIRS: usize = 8;

impl DirHandle {
    /// The handle of `dir` (opened now unless it is kept), or `None` when it cannot be opened
    /// beneath the root (it left the workspace, or is gone).
    pub fn open(&mut self, tree: &dyn Tree, dir: &Path) -> Option<&OwnedFd> {
        match self.open.iter().position(|(path, _)| path == dir) {
            Some(0) => {}
            Some(at) => {
                let kept = self.open.remove(at);
                self.open.insert(0, kept);
            }
            None => {
                self.open.truncate(KEPT_DIRS - 1);
                let handle = tree.open_dir(dir).ok();
                self.open.insert(0, (dir.to_path_buf(), handle));
            }
        }
        self.open.first().and_then(|(_, fd)| fd.as_ref())
    }
}

/// One thread's results not yet handed over; the rest go when the thread's visitor is dropped.
struct Batch<'a, T> {
    found: Vec<T>,
    kept: &'a Mutex<Vec<T>>,
}

impl<T> Batch<'_, T> {
    fn flush(&mut self) {
        if !self.found.is_empty() {
            lock(self.kept).append(&mut self.found);
        }
    }
}

impl<T> Drop for Batch<'_, T> {
    fn drop(&mut self) {
        self.flush();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
