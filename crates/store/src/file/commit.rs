//! Group commit: the syncs of every store and every agent transcript of a process go through
//! one queue (see [`global`]). A writer makes its change visible first (appends its line,
//! writes its temp file) without holding anything while it waits, queues the file and waits
//! until the sync that covers its write has returned — only then is it told "written".
//!
//! Syncs are batched per file. Whoever queues a sync for a file nobody is syncing leads: it
//! takes every sync queued for that file, syncs it once (an `fdatasync` covers every byte
//! written to the file before it started), answers every waiter, and hands the lead to the
//! first writer that queued meanwhile (its write may have missed the sync that just ran). So a
//! lone writer syncs on its own thread with no hand-off, a hot file (the event log, the lead's
//! mailbox, the roster log) is synced once for everyone who wrote to it meanwhile, and
//! different files are synced side by side on their writers' threads, which the file system
//! folds into shared journal commits. No window is waited for: a batch is whatever queued while
//! the previous sync of the file ran.
//!
//! A writer on a tokio worker thread waits inside `block_in_place`, so the worker's other
//! tasks (other agents) move on meanwhile and queue their own writes into the same batch.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::StoreError;

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

/// Where one queued sync stands, as its waiter sees it.
#[derive(Debug)]
enum SlotState {
    /// Queued; someone else will sync it.
    Waiting,
    /// Its waiter leads the next batch.
    Lead,
    /// Synced (or failed).
    Done(io::Result<()>),
}

/// One waiter's mailbox for the answer.
#[derive(Debug)]
struct Slot {
    state: Mutex<SlotState>,
    changed: Condvar,
}

impl Slot {
    fn new(state: SlotState) -> Arc<Slot> {
        Arc::new(Slot {
            state: Mutex::new(state),
            changed: Condvar::new(),
        })
    }

    fn set(&self, state: SlotState) {
        *lock(&self.state) = state;
        self.changed.notify_one();
    }

    /// Blocks until the slot is no longer waiting; takes a `Done` answer out.
    fn next(&self) -> SlotState {
        let mut state = lock(&self.state);
        loop {
            match &*state {
                SlotState::Waiting => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                SlotState::Lead => {
                    *state = SlotState::Waiting;
                    return SlotState::Lead;
                }
                SlotState::Done(_) => return std::mem::replace(&mut *state, SlotState::Waiting),
            }
        }
    }
}

/// A queue's lock survives a panic elsewhere: what it guards stays consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One sync asked for: the file (kept open until synced) and whom to tell.
#[derive(Debug)]
struct Job {
    file: File,
    kind: SyncKind,
    slot: Arc<Slot>,
}

/// The syncs queued for one file.
#[derive(Debug, Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Someone leads (or has been handed the lead): new jobs wait for it.
    leading: bool,
}

/// A file by device and inode: every handle of it is synced by one sync.
type FileKey = (u64, u64);

/// A group committer: per file, a queue of syncs and whoever leads it.
#[derive(Debug)]
pub struct Committer {
    files: Mutex<Option<HashMap<FileKey, Queue>>>,
    /// Syncs run so far (each answering one or more writers).
    syncs: AtomicU64,
}

impl Default for Committer {
    fn default() -> Self {
        Committer::new()
    }
}

/// The process's committer, shared by every store and transcript so that all their syncs
/// batch together.
pub fn global() -> &'static Committer {
    static GLOBAL: Committer = Committer::new();
    &GLOBAL
}

/// A sync that was queued: [`Ticket::wait`] returns once it ran. A ticket dropped unwaited
/// still does its part (leads if it was handed the lead), so nobody is left waiting.
#[derive(Debug)]
pub struct Ticket {
    path: PathBuf,
    pending: Option<(&'static Committer, FileKey, Arc<Slot>)>,
    ready: Option<io::Result<()>>,
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

    /// Blocks until the sync covering this write has returned, and says how it went.
    pub fn wait(mut self) -> Result<(), StoreError> {
        let result = match self.pending.take() {
            Some((committer, key, slot)) => off_the_worker(|| committer.wait(key, &slot)),
            None => self.ready.take().unwrap_or(Ok(())),
        };
        result.map_err(StoreError::io("fsync", std::mem::take(&mut self.path)))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some((committer, key, slot)) = self.pending.take() {
            let _ = off_the_worker(|| committer.wait(key, &slot));
        }
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
    /// A committer with nothing queued.
    pub const fn new() -> Committer {
        Committer {
            files: Mutex::new(None),
            syncs: AtomicU64::new(0),
        }
    }

    /// How many syncs ran so far (each may have answered many writers).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Queues the sync of `file` (just written, at `path`).
    pub fn submit(&'static self, file: File, path: &Path, kind: SyncKind) -> Ticket {
        let key = match file.metadata() {
            Ok(meta) => (meta.dev(), meta.ino()),
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
        let queue = files
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default();
        let slot = if queue.leading {
            Slot::new(SlotState::Waiting)
        } else {
            queue.leading = true;
            Slot::new(SlotState::Lead)
        };
        queue.jobs.push(Job {
            file,
            kind,
            slot: slot.clone(),
        });
        Ticket {
            path: path.to_path_buf(),
            pending: Some((self, key, slot)),
            ready: None,
        }
    }

    /// Queues the sync of `file` and waits for it.
    pub fn sync(&'static self, file: File, path: &Path, kind: SyncKind) -> Result<(), StoreError> {
        self.submit(file, path, kind).wait()
    }

    /// Waits for `slot`'s answer, leading a sync of the file whenever handed the lead.
    fn wait(&self, key: FileKey, slot: &Slot) -> io::Result<()> {
        loop {
            match slot.next() {
                SlotState::Done(result) => return result,
                SlotState::Lead => self.lead(key),
                SlotState::Waiting => {}
            }
        }
    }

    /// Syncs the file once for everything queued for it, answers its waiters, and passes the
    /// lead on.
    fn lead(&self, key: FileKey) {
        // Passes the lead on even if the sync panics, so nobody waits forever.
        struct Handover<'a>(&'a Committer, FileKey);
        impl Drop for Handover<'_> {
            fn drop(&mut self) {
                let mut files = lock(&self.0.files);
                let Some(map) = files.as_mut() else { return };
                let next = map.get(&self.1).and_then(|q| q.jobs.first());
                match next {
                    Some(job) => job.slot.set(SlotState::Lead),
                    None => {
                        map.remove(&self.1);
                    }
                }
            }
        }
        let _handover = Handover(self, key);
        let batch = lock(&self.files)
            .as_mut()
            .and_then(|map| map.get_mut(&key))
            .map(|q| std::mem::take(&mut q.jobs))
            .unwrap_or_default();
        answer(batch);
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }
}

/// Syncs one file for every job of a batch (all handles of the same file; the strongest kind
/// asked for) and tells each waiter how it went.
fn answer(batch: Vec<Job>) {
    let kind = if batch.iter().any(|j| j.kind == SyncKind::All) {
        SyncKind::All
    } else {
        SyncKind::Data
    };
    let Some(first) = batch.first() else { return };
    let result = sync_now(&first.file, kind);
    for job in &batch {
        let answer = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        job.slot.set(SlotState::Done(answer));
    }
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
