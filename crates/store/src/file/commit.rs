//! Group commit: one thread per process owns the syncs of every store (and of every agent's
//! transcript, see [`global`]). A writer makes its change visible first
//! (appends its line, writes its temp file) without holding anything while it waits, hands the
//! file to the commit thread and blocks until the sync that covers its write has returned —
//! only then is it told "written". The thread takes every sync queued meanwhile as one batch,
//! syncs each file once however many writes it holds (an `fdatasync` covers every byte written
//! to the file before it started), and runs the syncs of different files side by side, so the
//! file system folds them into one journal commit. A thousand agents appending at once cost a
//! few batches, not a thousand syncs one after another.
//!
//! Nothing is waited for on purpose: a batch is whatever queued while the previous one was
//! syncing (the window is the length of a sync, and zero for a lone writer).
//!
//! A writer on a tokio worker thread waits inside `block_in_place`, so the worker's other
//! tasks (other agents) move on meanwhile and queue their own writes into the same batch.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::OnceLock;

use crate::error::StoreError;

/// Most syncs of one batch run at the same time.
const MAX_PARALLEL: usize = 8;

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

/// One sync asked for: the file (its handle is kept open until the sync ran) and who waits.
struct Job {
    file: File,
    kind: SyncKind,
    done: SyncSender<io::Result<()>>,
}

/// A sync that was handed over: [`Ticket::wait`] returns once it ran.
#[derive(Debug)]
pub struct Ticket {
    path: PathBuf,
    state: TicketState,
}

#[derive(Debug)]
enum TicketState {
    Ready(io::Result<()>),
    Pending(Receiver<io::Result<()>>),
}

impl Ticket {
    /// A ticket with nothing to wait for (a store that does not sync).
    pub fn done(path: &Path) -> Ticket {
        Ticket {
            path: path.to_path_buf(),
            state: TicketState::Ready(Ok(())),
        }
    }

    /// Blocks until the sync covering this write has returned, and says how it went.
    pub fn wait(self) -> Result<(), StoreError> {
        let result = match self.state {
            TicketState::Ready(r) => r,
            TicketState::Pending(rx) => off_the_worker(|| rx.recv()).unwrap_or_else(|_| {
                Err(io::Error::other("the commit thread stopped before syncing"))
            }),
        };
        result.map_err(StoreError::io("fsync", self.path))
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

/// A commit thread, started on first use.
#[derive(Debug, Default)]
pub struct Committer {
    queue: OnceLock<Option<Sender<Job>>>,
}

/// The process's commit thread, shared by every store and transcript so that all their syncs
/// batch together.
pub fn global() -> &'static Committer {
    static GLOBAL: Committer = Committer::new();
    &GLOBAL
}

impl Committer {
    /// A committer whose thread has not started yet.
    pub const fn new() -> Committer {
        Committer {
            queue: OnceLock::new(),
        }
    }

    /// Hands `file` (just written, at `path`) to the commit thread.
    pub fn submit(&self, file: File, path: &Path, kind: SyncKind) -> Ticket {
        let path = path.to_path_buf();
        let Some(queue) = self.queue.get_or_init(start) else {
            // No thread (the OS refused one): sync here, as before group commit.
            let result = sync_now(&file, kind);
            return Ticket {
                path,
                state: TicketState::Ready(result),
            };
        };
        let (done, rx) = mpsc::sync_channel(1);
        match queue.send(Job { file, kind, done }) {
            Ok(()) => Ticket {
                path,
                state: TicketState::Pending(rx),
            },
            Err(mpsc::SendError(job)) => Ticket {
                path,
                state: TicketState::Ready(sync_now(&job.file, job.kind)),
            },
        }
    }

    /// Hands `file` over and waits for its sync.
    pub fn sync(&self, file: File, path: &Path, kind: SyncKind) -> Result<(), StoreError> {
        self.submit(file, path, kind).wait()
    }
}

fn start() -> Option<Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    match std::thread::Builder::new()
        .name("troupe-store-commit".into())
        .spawn(move || run(&rx))
    {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::warn!(error = %e, "cannot start the group commit thread; syncing inline");
            None
        }
    }
}

/// The commit thread: a batch is everything queued when the previous batch is done.
fn run(rx: &Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        commit(batch);
    }
}

/// The writes of one file in a batch: synced once, all waiters told.
struct Group {
    file: File,
    kind: SyncKind,
    waiters: Vec<SyncSender<io::Result<()>>>,
}

fn commit(batch: Vec<Job>) {
    answer(group(batch));
}

/// The batch's jobs by file (device and inode): one group per file, in order of first use.
fn group(batch: Vec<Job>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut by_inode: HashMap<(u64, u64), usize> = HashMap::new();
    for job in batch {
        let key = job.file.metadata().ok().map(|m| (m.dev(), m.ino()));
        match key.and_then(|k| by_inode.get(&k).copied()) {
            Some(i) => {
                let group = &mut groups[i];
                if job.kind == SyncKind::All {
                    group.kind = SyncKind::All;
                }
                group.waiters.push(job.done);
            }
            None => {
                if let Some(k) = key {
                    by_inode.insert(k, groups.len());
                }
                groups.push(Group {
                    file: job.file,
                    kind: job.kind,
                    waiters: vec![job.done],
                });
            }
        }
    }
    groups
}

/// Syncs every group and tells each of its waiters how it went.
fn answer(groups: Vec<Group>) {
    let results = sync_groups(&groups);
    for (group, result) in groups.into_iter().zip(results) {
        for waiter in group.waiters {
            let answer = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
            };
            // A waiter that gave up (its thread ended) needs no answer.
            let _ = waiter.send(answer);
        }
    }
}

/// Syncs every group, several at a time, in order of the returned results.
fn sync_groups(groups: &[Group]) -> Vec<io::Result<()>> {
    if groups.len() == 1 {
        return vec![sync_now(&groups[0].file, groups[0].kind)];
    }
    let workers = groups.len().min(MAX_PARALLEL);
    let mut results: Vec<Option<io::Result<()>>> = (0..groups.len()).map(|_| None).collect();
    let run_share = |w: usize| {
        groups
            .iter()
            .enumerate()
            .skip(w)
            .step_by(workers)
            .map(|(i, g)| (i, sync_now(&g.file, g.kind)))
            .collect::<Vec<_>>()
    };
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for w in 0..workers {
            match std::thread::Builder::new().spawn_scoped(scope, move || run_share(w)) {
                Ok(handle) => handles.push(handle),
                // No thread to spare: this share runs here.
                Err(_) => {
                    for (i, r) in run_share(w) {
                        results[i] = Some(r);
                    }
                }
            }
        }
        for handle in handles {
            // A worker that panicked leaves its groups unanswered: they get an error below.
            if let Ok(done) = handle.join() {
                for (i, r) in done {
                    results[i] = Some(r);
                }
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(io::Error::other("the sync did not run"))))
        .collect()
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
