//! Group commit: the syncs of every store and every agent transcript of a process go through
//! one committer (see [`global`]). A writer makes its change visible first (appends its line,
//! writes its temp file) without holding anything while it waits, then asks for the sync that
//! covers its write and returns only once it has returned — only then is it told "written".
//!
//! Syncs are shared per file. Each write to a file gets a sequence number when it is handed
//! over; a sync covers every write handed over before it started (an `fdatasync` covers every
//! byte written to the file before it started). At most one sync of a file runs at a time. A
//! writer whose file has a sync running waits for it: it returns at once if that sync covers
//! its write, and otherwise the first writer to wake starts the next sync, covering every write
//! handed over meanwhile. A writer whose file has no sync running starts one at once, on its
//! own thread, covering every write handed over so far. So a hot file (the event log, the
//! lead's mailbox, the roster log) written by many teammates at once is synced about twice per
//! burst rather than once per writer, a lone writer pays one sync and no hand-off, and different
//! files are synced side by side, which the file system folds into shared journal commits.
//!
//! A writer on a tokio worker thread waits inside `block_in_place`, so the worker's other
//! tasks (other agents) move on meanwhile and join the same syncs.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::DurableError;

/// What a sync makes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// The file's data and what is needed to read it back (`fdatasync`): appends, temp files.
    Data,
    /// Everything, metadata included (`fsync`): directories after a rename.
    All,
}

/// Syncs `file` now, on the calling thread.
pub fn sync_now(file: &File, kind: SyncKind) -> io::Result<()> {
    match kind {
        SyncKind::Data => file.sync_data(),
        SyncKind::All => file.sync_all(),
    }
}

/// A lock that survives a panic elsewhere: what it guards stays consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file by device, inode and the kind of sync asked for.
type FileKey = (u64, u64, bool);

/// The syncs of one file.
#[derive(Debug, Default)]
struct FileSyncs {
    /// The sequence number of the last write handed over.
    handed: u64,
    /// Every write up to this one is durable.
    durable: u64,
    /// The writes covered by the syncs running now (the last one each covers).
    running: Vec<u64>,
    /// The last failed sync: the last write it covered, and why.
    failed: Option<(u64, io::ErrorKind, String)>,
}

/// A group committer: per file, which writes are durable and which syncs are running.
#[derive(Debug)]
pub struct Committer {
    files: Mutex<Option<HashMap<FileKey, FileSyncs>>>,
    /// Woken whenever a sync ends.
    ended: Condvar,
    /// Syncs run so far (each answering one or more writers).
    syncs: AtomicU64,
    /// The last sequence number given to a write (of any file: numbers never restart, even
    /// when a file's record is forgotten and made anew).
    last_seq: AtomicU64,
}

impl Default for Committer {
    fn default() -> Self {
        Committer::new()
    }
}

/// The process's committer, shared by every store and transcript so that all their syncs
/// are shared.
pub fn global() -> &'static Committer {
    static GLOBAL: Committer = Committer::new();
    &GLOBAL
}

/// A write handed over for syncing: [`Ticket::wait`] returns once a sync covering it returned.
#[derive(Debug)]
pub struct Ticket {
    path: PathBuf,
    pending: Option<Pending>,
    ready: Option<io::Result<()>>,
}

/// What a ticket waits for.
#[derive(Debug)]
struct Pending {
    committer: &'static Committer,
    key: FileKey,
    seq: u64,
    file: File,
    kind: SyncKind,
}

impl Ticket {
    /// A ticket with nothing to wait for (a store that does not sync).
    pub fn done(path: &Path) -> Ticket {
        Ticket {
            path: path.to_path_buf(),
            pending: None,
            ready: Some(Ok(())),
        }
    }

    /// Blocks until a sync covering this write has returned, and says how it went.
    pub fn wait(mut self) -> Result<(), DurableError> {
        let result = match self.pending.take() {
            Some(p) => off_the_worker(|| p.committer.wait(&p)),
            None => self.ready.take().unwrap_or(Ok(())),
        };
        result.map_err(DurableError::io("fsync", std::mem::take(&mut self.path)))
    }
}

/// Runs `wait` (a blocking wait) so that it does not hold up a tokio worker: inside
/// `block_in_place` on a multi-threaded runtime (other tasks move to another thread), as is
/// anywhere else.
fn off_the_worker<R>(wait: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

impl Committer {
    /// A committer with nothing handed over.
    pub const fn new() -> Committer {
        Committer {
            files: Mutex::new(None),
            ended: Condvar::new(),
            syncs: AtomicU64::new(0),
            last_seq: AtomicU64::new(0),
        }
    }

    /// How many syncs ran so far (each may have answered many writers).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Hands over the write just made to `file` (at `path`) for syncing.
    pub fn submit(&'static self, file: File, path: &Path, kind: SyncKind) -> Ticket {
        let key = match file.metadata() {
            Ok(meta) => (meta.dev(), meta.ino(), kind == SyncKind::All),
            // A handle that cannot be told apart is synced on its own, here.
            Err(_) => {
                self.syncs.fetch_add(1, Ordering::Relaxed);
                return Ticket {
                    path: path.to_path_buf(),
                    pending: None,
                    ready: Some(sync_now(&file, kind)),
                };
            }
        };
        let mut files = lock(&self.files);
        // Given under the lock: a file's numbers grow in the order its writes were handed over.
        let seq = self.last_seq.fetch_add(1, Ordering::Relaxed) + 1;
        // A file without a record has nothing undurable before this write: its record is
        // forgotten only once every write handed over was durable.
        let syncs = files
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert_with(|| FileSyncs {
                durable: seq - 1,
                ..FileSyncs::default()
            });
        syncs.handed = seq;
        Ticket {
            path: path.to_path_buf(),
            pending: Some(Pending {
                committer: self,
                key,
                seq,
                file,
                kind,
            }),
            ready: None,
        }
    }

    /// Hands the write over and waits for its sync.
    pub fn sync(
        &'static self,
        file: File,
        path: &Path,
        kind: SyncKind,
    ) -> Result<(), DurableError> {
        self.submit(file, path, kind).wait()
    }

    /// Waits for a running sync that covers `p`'s write, or runs one itself.
    fn wait(&self, p: &Pending) -> io::Result<()> {
        let mut files = lock(&self.files);
        loop {
            let Some(syncs) = files.as_mut().and_then(|m| m.get_mut(&p.key)) else {
                return Ok(()); // forgotten only once every write was durable
            };
            if syncs.durable >= p.seq {
                return Ok(());
            }
            if let Some((upto, kind, message)) = &syncs.failed {
                if *upto >= p.seq {
                    return Err(io::Error::new(*kind, message.clone()));
                }
            }
            // A sync running now, covering this write or not: wait for it. One that does not
            // cover it is followed by one that covers every write handed over meanwhile, so a
            // burst of writers to a hot file costs two syncs, not one each.
            if !syncs.running.is_empty() {
                files = self
                    .ended
                    .wait(files)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Nobody's sync covers this write: one starts now, covering all handed over.
            let covers = syncs.handed;
            syncs.running.push(covers);
            drop(files);
            let result = sync_now(&p.file, p.kind);
            self.syncs.fetch_add(1, Ordering::Relaxed);
            files = lock(&self.files);
            if let Some(map) = files.as_mut() {
                if let Some(syncs) = map.get_mut(&p.key) {
                    syncs.running.retain(|c| *c != covers);
                    match &result {
                        Ok(()) => syncs.durable = syncs.durable.max(covers),
                        Err(e) => syncs.failed = Some((covers, e.kind(), e.to_string())),
                    }
                    if syncs.durable == syncs.handed && syncs.running.is_empty() {
                        map.remove(&p.key);
                    }
                }
            }
            self.ended.notify_all();
            return result;
        }
    }
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
