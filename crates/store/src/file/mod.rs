//! The embedded file backend: one directory per team under `.troupe/teams/`, laid out as in
//! docs/DESIGN.md ("State and durability"), safe for several processes at once.
//!
//! ```text
//! teams/<team>/roster.jsonl  roster.lock   (the roster log; see `roster`. An older version's
//!                                           roster.json is read, then migrated. The lock
//!                                           file holds the log's index: `roster_index`)
//!              members              (the member table: a slot per member, with its lease,
//!                                    a lock its live process holds, see `crate::live`, and its
//!                                    name, lease holder, roster place, usage and doing as
//!                                    volatile records: `slots`, `records`. An older version's
//!                                    live/<agent>.lock and presence/<agent>.{doing,usage} are
//!                                    read; the presence folder is then removed)
//!              inbox/<agent>.jsonl  inbox/<agent>.cursor (fixed width, written in place)
//!              inbox/<agent>.wake (a socket, only while another listener holds the
//!                                  agent's abstract wake name: see `wake`)
//!              requests/<id>.json   requests/.lock-<0..15>
//!              tasks/<id>.json      tasks/.next  tasks/.lock  tasks/.<id>.lock
//!              transcripts/<agent>.jsonl
//!              events.jsonl
//! ```
//!
//! The folders `inbox/`, `requests/` and `transcripts/` are made on first use (`Folder`): a
//! run that sends no mail, makes no request and keeps no transcript makes none of them.
//!
//! Every durable write goes through the process's group commit (`commit`): the write is made,
//! then its sync is shared with every other write to the same file waiting at that moment, and
//! the caller returns only after the sync that covers its write.
//!
//! Everything outside this crate opens it with [`open`] and sees only `dyn TeamStore`.

mod adapter;
mod changes;
mod events;
pub(crate) mod lease;
mod mailbox;
mod presence;
pub(crate) mod records;
mod requests;
mod roster;
mod roster_index;
mod roster_join;
pub(crate) mod slots;
mod sync;
mod tasks;
mod transcripts;
mod wake;

use crate::error::{check_agent, check_name};
use std::fs::{self, File};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use troupe_protocol::now_ms;

use troupe_protocol::validate_agent_name;

use crate::error::StoreError;
use crate::{ChangeWatch, Durability, SharedStore, TeamStore};

pub use changes::{wait_for_team, FileChangeWatch};
use troupe_durable::commit::{self, SyncKind};
use troupe_durable::{atomic, jsonl};

/// What to check when a file of the store cannot be used.
const FILE_HINT: &str = "check that the directory exists and is writable";

impl StoreError {
    /// Wraps an I/O error of the file backend with the action and path it concerns.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Storage {
            action,
            place: path.display().to_string(),
            detail: source.to_string(),
            hint: FILE_HINT,
        }
    }
}

impl From<troupe_durable::DurableError> for StoreError {
    fn from(e: troupe_durable::DurableError) -> StoreError {
        StoreError::io(e.action, e.path)(e.source)
    }
}

/// Opens (creating as needed) the file store of `team` under `troupe_dir` (the `.troupe`
/// directory), with fsync durability: the file backend as the team runtime sees it.
pub fn open(troupe_dir: &Path, team: &str) -> Result<SharedStore, StoreError> {
    open_with(troupe_dir, team, Durability::Fsync)
}

/// Like [`open`], choosing the durability.
pub fn open_with(
    troupe_dir: &Path,
    team: &str,
    durability: Durability,
) -> Result<SharedStore, StoreError> {
    Ok(Arc::new(FileStore::open_with(
        troupe_dir, team, durability,
    )?))
}

/// True when `troupe_dir` holds a store for `team` (a lead created it).
pub fn exists(troupe_dir: &Path, team: &str) -> bool {
    validate_agent_name(team).is_ok() && troupe_dir.join("teams").join(team).is_dir()
}

/// Whether `team` has this store's state here (its roster), not only the local files of a team
/// kept elsewhere (a NATS team's transcripts).
pub fn has_roster(troupe_dir: &Path, team: &str) -> bool {
    let dir = team_dir(troupe_dir, team);
    exists(troupe_dir, team)
        && (dir.join(roster::LOG).is_file() || dir.join(roster::LEGACY).is_file())
}

/// Where the agent loop keeps `agent`'s transcript on this machine, whatever the team's
/// backend: `teams/<team>/transcripts/<agent>.jsonl` under `troupe_dir` (on this backend it is
/// the transcript itself, on a server's this machine's cache of it).
pub fn transcript_path(troupe_dir: &Path, team: &str, agent: &str) -> Result<PathBuf, StoreError> {
    check_name("team", team)?;
    check_agent(agent)?;
    Ok(team_dir(troupe_dir, team)
        .join("transcripts")
        .join(format!("{agent}.jsonl")))
}

/// Where a team's own local files live (teammate process logs), next to its store.
pub fn team_dir(troupe_dir: &Path, team: &str) -> PathBuf {
    troupe_dir.join("teams").join(team)
}

/// The file-backed team store; cheap to clone, usable from many threads.
#[derive(Debug, Clone)]
pub struct FileStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    team: String,
    dir: PathBuf,
    durability: Durability,
    /// Unbound datagram socket used to send wake-ups; `None` if the OS refused to create one
    /// (wake-ups are an optimisation: recipients also find mail when they next fetch).
    waker: Option<UnixDatagram>,
    /// The roster as this instance last read it (see `roster`).
    roster: Mutex<roster::RosterCache>,
    /// `roster.lock`, kept open; held by this instance's roster writers one at a time.
    roster_lock: Mutex<Option<File>>,
    /// The async callers' turn to write the roster (see `adapter`), shared by every instance
    /// of this process on the team's folder (`roster_turn`).
    roster_writers: Arc<tokio::sync::Mutex<()>>,
    /// Set once this instance has removed an older version's `presence/` folder (or found
    /// none to remove); from then on it is not read either.
    legacy_presence_gone: AtomicBool,
    /// The team's member table, once this instance opened it.
    members: std::sync::OnceLock<Arc<slots::Table>>,
    /// Which of the folders made on first use this instance knows are there.
    folders: [AtomicBool; 3],
}

/// A folder of the team made on first use.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Folder {
    Inbox = 0,
    Requests = 1,
    Transcripts = 2,
}

impl Folder {
    fn name(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Requests => "requests",
            Folder::Transcripts => "transcripts",
        }
    }
}

/// The turn to write the roster of the team at `dir`, one per folder in this process: writers
/// on many instances (a bench's or a test's stand-ins for processes) queue in order for it
/// before taking the roster's `flock`, instead of all waiting on the `flock`, whose release
/// wakes every waiter to try again (at 300 writers, a round cost more than 3.5× the round of
/// 100).
fn roster_turn(dir: &Path) -> Arc<tokio::sync::Mutex<()>> {
    type Turns = std::collections::HashMap<PathBuf, std::sync::Weak<tokio::sync::Mutex<()>>>;
    static TURNS: Mutex<Option<Turns>> = Mutex::new(None);
    let mut turns = TURNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let turns = turns.get_or_insert_with(Default::default);
    if let Some(turn) = turns.get(dir).and_then(std::sync::Weak::upgrade) {
        return turn;
    }
    let turn = Arc::new(tokio::sync::Mutex::const_new(()));
    turns.retain(|_, t| t.strong_count() > 0);
    turns.insert(dir.to_path_buf(), Arc::downgrade(&turn));
    turn
}

impl FileStore {
    /// The team's member table (`slots`); when it does not exist yet, made if `create`, else
    /// `None`.
    pub(crate) fn member_table(
        &self,
        create: bool,
    ) -> Result<Option<Arc<slots::Table>>, StoreError> {
        if let Some(table) = self.inner.members.get() {
            return Ok(Some(Arc::clone(table)));
        }
        let Some(table) = slots::open(&self.inner.dir, create)? else {
            return Ok(None);
        };
        Ok(Some(Arc::clone(self.inner.members.get_or_init(|| table))))
    }

    /// Opens (creating as needed) the store of `team` under `troupe_dir` (the `.troupe`
    /// directory), with fsync durability.
    pub fn open(troupe_dir: &Path, team: &str) -> Result<FileStore, StoreError> {
        FileStore::open_with(troupe_dir, team, Durability::Fsync)
    }

    /// Like [`FileStore::open`], choosing the durability.
    pub fn open_with(
        troupe_dir: &Path,
        team: &str,
        durability: Durability,
    ) -> Result<FileStore, StoreError> {
        // The other folders are made on first use (`folder`).
        FileStore::open_dirs(troupe_dir, team, durability, &[])
    }

    /// The local transcript files of a team whose state lives elsewhere (a server): only
    /// `transcripts/` is made, no empty `inbox/` or `requests/`.
    pub fn open_transcripts(
        troupe_dir: &Path,
        team: &str,
        durability: Durability,
    ) -> Result<FileStore, StoreError> {
        FileStore::open_dirs(troupe_dir, team, durability, &["transcripts"])
    }

    fn open_dirs(
        troupe_dir: &Path,
        team: &str,
        durability: Durability,
        subs: &[&str],
    ) -> Result<FileStore, StoreError> {
        check_name("team", team)?;
        let dir = troupe_dir.join("teams").join(team);
        fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
        for sub in subs {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(StoreError::io("create directory", &path))?;
        }
        let waker = UnixDatagram::unbound()
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
            .map_err(|e| tracing::warn!(error = %e, "cannot create wake socket; wake-ups disabled"))
            .ok();
        let roster_writers = roster_turn(&dir);
        Ok(FileStore {
            inner: Arc::new(Inner {
                team: team.to_string(),
                dir,
                durability,
                waker,
                roster: Mutex::default(),
                roster_lock: Mutex::default(),
                roster_writers,
                legacy_presence_gone: AtomicBool::new(false),
                members: std::sync::OnceLock::new(),
                folders: Default::default(),
            }),
        })
    }

    /// The team's directory (`<troupe_dir>/teams/<team>`).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The durability this store was opened with.
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// Binds the agent's raw wake socket, for blocking (non-async) consumers such as the
    /// benchmarks; the team runtime uses [`crate::MailboxStore::watch`].
    pub fn wake_socket(&self, agent: &str) -> Result<UnixDatagram, StoreError> {
        check_agent(agent)?;
        wake::bind(&self.inbox_dir(), agent)
    }

    fn inbox_dir(&self) -> PathBuf {
        self.inner.dir.join("inbox")
    }

    fn requests_dir(&self) -> PathBuf {
        self.inner.dir.join("requests")
    }

    fn events_path(&self) -> PathBuf {
        self.inner.dir.join("events.jsonl")
    }

    /// Hands `file`, just written at `path`, to the group commit when the store is durable;
    /// the write counts as written once the returned ticket's wait returns.
    fn sync_later(&self, file: File, path: &Path, kind: SyncKind) -> commit::Ticket {
        match self.durability() {
            Durability::Fsync => commit::global().submit(file, path, kind),
            Durability::OsBuffered => commit::Ticket::done(path),
        }
    }

    /// Makes `file`, just written at `path`, durable (as the store's durability asks).
    fn sync(&self, file: File, path: &Path, kind: SyncKind) -> Result<(), StoreError> {
        Ok(self.sync_later(file, path, kind).wait()?)
    }

    /// The team's folder `which`, made unless this instance has seen it. A folder made here is
    /// synced into the team's directory, so that what is then written durably inside it stays
    /// found after a crash.
    pub(crate) fn folder(&self, which: Folder) -> Result<PathBuf, StoreError> {
        let path = self.inner.dir.join(which.name());
        let seen = &self.inner.folders[which as usize];
        if seen.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(path);
        }
        match fs::create_dir(&path) {
            Ok(()) => {
                let dir = &self.inner.dir;
                let handle = File::open(dir).map_err(StoreError::io("open directory", dir))?;
                self.sync(handle, dir, SyncKind::All)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            // The team's own directory is gone (removed under a running store): made again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(&path).map_err(StoreError::io("create directory", &path))?;
            }
            Err(e) => return Err(StoreError::io("create directory", &path)(e)),
        }
        seen.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(path)
    }

    /// Appends whole lines to a log and returns once they are durable.
    fn append_durably(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let file = jsonl::write_lines(path, bytes)?;
        self.sync(file, path, SyncKind::Data)
    }

    /// Replaces a whole file atomically and returns once the change is durable.
    fn replace_file(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        Ok(atomic::write_atomic_by(
            path,
            bytes,
            self.durability(),
            &mut |file, at, kind| self.sync_later(file, at, kind).wait(),
        )?)
    }
}

#[async_trait::async_trait]
impl TeamStore for FileStore {
    fn team(&self) -> &str {
        &self.inner.team
    }

    async fn watch_changes(&self) -> Result<Box<dyn ChangeWatch>, StoreError> {
        let store = self.clone();
        // Setting up inotify reads the directory tree: on the blocking pool.
        Ok(Box::new(
            adapter::on_blocking_pool(move || store.watch_dir_changes()).await?,
        ))
    }
}

/// Serializes a value as one JSON line (newline included).
fn to_line<T: serde::Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, StoreError> {
    let mut line =
        serde_json::to_vec(value).map_err(|source| StoreError::Serialize { what, source })?;
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instances_on_one_team_folder_share_one_roster_turn() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let open = |team: &str| {
            FileStore::open_with(dir.path(), team, Durability::OsBuffered)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (a, b, other) = (open("blue"), open("blue"), open("green"));
        assert!(Arc::ptr_eq(
            &a.inner.roster_writers,
            &b.inner.roster_writers
        ));
        assert!(!Arc::ptr_eq(
            &a.inner.roster_writers,
            &other.inner.roster_writers
        ));
        // While one instance holds the turn, another instance's writer waits for it.
        let held = a
            .inner
            .roster_writers
            .try_lock()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(b.inner.roster_writers.try_lock().is_err());
        drop(held);
        assert!(b.inner.roster_writers.try_lock().is_ok());
    }
}
