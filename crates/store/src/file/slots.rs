//! The team's member table, `members` in the team's folder: one slot of `records::SLOT` bytes
//! per member, at `slot × SLOT`, holding its volatile records (`records` has the layout). A member
//! claims its slot the first time it takes a lease or writes presence, and keeps it: a slot is
//! never given to another name, so a process may remember where each name is for as long as it
//! runs.
//!
//! The member's lease (`lease`) is an open-file-description lock on one of two bytes far
//! past the slots: `LEASE_AT + n` for slot `n`, which a process locks through the table's one
//! description for every member it runs, or `HANDED_AT + n`, which a description of its own
//! holds once the lease was handed to a child process. One description per process, on
//! neighbouring bytes, because the kernel keeps a file's locks in one list, which every close of
//! any descriptor of the file walks: a thousand leases each on a description of its own made
//! each of the thousand descriptors a process closes at an `exec` walk a thousand locks, while
//! one description's neighbouring bytes merge into one lock. Within the process, the table
//! keeps which slots it holds, since a description never conflicts with itself.
//!
//! One file for the whole team, not one per member: at a thousand teammates, each new file was
//! an inode the file system had to find, and on an ext4 without a journal that search skips
//! every inode deleted in the last half minute (decision record 0036).
//!
//! Claiming is serialised by a lock on a byte far past any slot (`CLAIM_AT`), taken with a wait
//! through the table's own description (and, within this process, under the index's mutex):
//! the claimer reads the table to its end, and writes the name into the first empty slot. A
//! reader without that lock that meets a slot being written reads it again, then goes past it
//! without trusting that it read the table that far. A slot a claimer left half written (it
//! died) is garbage: the next claimer, who holds the lock, knows nobody is writing it and goes
//! past it for good.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::records::{self, Found, Region, NAME, SLOT};
use crate::error::StoreError;

/// The table, in the team directory.
pub(crate) const FILE: &str = "members";
/// An older troupe's folder of member files (`live/<agent>.lock`).
pub(crate) const LEGACY_LIVE: &str = "live";
/// Where the leases' bytes are (see the module's doc), past any slot a team will have.
const LEASE_AT: i64 = 1 << 40;
const HANDED_AT: i64 = 1 << 41;
/// The byte whose lock serialises claims.
const CLAIM_AT: i64 = 1 << 42;

/// One team's member table, open once per process (see [`open`]).
#[derive(Debug)]
pub(crate) struct Table {
    /// Read and written for every record; it holds this process's leases, and claims lock
    /// `CLAIM_AT` through it.
    file: File,
    path: PathBuf,
    index: Mutex<Index>,
    /// The slots (their numbers) whose leases this process holds through `file`.
    held: Mutex<HashSet<u64>>,
}

/// Where the names this process has read are.
#[derive(Debug, Default)]
struct Index {
    slots: HashMap<String, u64>,
    /// Slots `0..known` are read for good: named, or garbage a claimer went past.
    known: u64,
}

/// Tables open in this process, by team directory.
static TABLES: Mutex<Option<HashMap<PathBuf, Weak<Table>>>> = Mutex::new(None);

/// The member table of the team at `team_dir`; when it does not exist yet, made if `create`,
/// else `None`.
pub(crate) fn open(team_dir: &Path, create: bool) -> Result<Option<Arc<Table>>, StoreError> {
    let mut tables = TABLES.lock().unwrap_or_else(PoisonError::into_inner);
    let tables = tables.get_or_insert_with(HashMap::new);
    if let Some(table) = tables.get(team_dir).and_then(Weak::upgrade) {
        return Ok(Some(table));
    }
    let path = team_dir.join(FILE);
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(&path)
    };
    let file = match open() {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound && !create => return Ok(None),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(team_dir).map_err(StoreError::io("create directory", team_dir))?;
            open().map_err(StoreError::io("open", &path))?
        }
        Err(e) => return Err(StoreError::io("open", &path)(e)),
    };
    let table = Arc::new(Table::new(file, path));
    tables.retain(|_, t| t.strong_count() > 0);
    tables.insert(team_dir.to_path_buf(), Arc::downgrade(&table));
    Ok(Some(table))
}

impl Table {
    fn new(file: File, path: PathBuf) -> Table {
        Table {
            file,
            path,
            index: Mutex::new(Index::default()),
            held: Mutex::new(HashSet::new()),
        }
    }

    /// The table's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The table's own description.
    #[cfg(test)]
    pub fn file(&self) -> &File {
        &self.file
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where `agent`'s slot starts; when it has none, a slot claimed for it if `claim`, else
    /// `None`.
    pub fn slot(&self, agent: &str, claim: bool) -> Result<Option<u64>, StoreError> {
        let mut index = self.index();
        if let Some(slot) = index.slots.get(agent) {
            return Ok(Some(*slot * SLOT));
        }
        self.read_on(&mut index, false);
        if let Some(slot) = index.slots.get(agent) {
            return Ok(Some(*slot * SLOT));
        }
        if !claim {
            return Ok(None);
        }
        self.lock_claims(libc::F_OFD_SETLKW, libc::F_WRLCK)
            .map_err(StoreError::io("lock the member table", &self.path))?;
        let claimed = self.claim(&mut index, agent);
        // Unlocking cannot fail for a lock we hold; were it to, closing the table would.
        let _ = self.lock_claims(libc::F_OFD_SETLK, libc::F_UNLCK);
        claimed.map(|slot| Some(slot * SLOT))
    }

    /// Under the claim lock: `agent`'s slot, found or written into the first empty one.
    fn claim(&self, index: &mut Index, agent: &str) -> Result<u64, StoreError> {
        let end = self.read_on(index, true);
        if let Some(slot) = index.slots.get(agent) {
            return Ok(*slot);
        }
        records::write(&self.file, &self.path, end * SLOT, NAME, agent.as_bytes())?;
        index.slots.insert(agent.to_string(), end);
        if index.known == end {
            index.known = end + 1;
        }
        Ok(end)
    }

    /// Reads the names of the slots past those known, up to the first empty slot (which it
    /// returns). `claiming`: the caller holds the claim lock, so a torn slot is garbage.
    fn read_on(&self, index: &mut Index, claiming: bool) -> u64 {
        let mut slot = index.known;
        let mut settled = true;
        loop {
            match records::look(&self.file, slot * SLOT, NAME) {
                Found::Empty => return slot,
                Found::Value(name) => {
                    if let Ok(name) = String::from_utf8(name) {
                        index.slots.entry(name).or_insert(slot);
                    }
                }
                Found::Torn if claiming => {}
                Found::Torn => settled = false,
            }
            slot += 1;
            if settled {
                index.known = slot;
            }
        }
    }

    /// Every named slot, by name, with its start.
    pub fn members(&self) -> Vec<(String, u64)> {
        let mut index = self.index();
        self.read_on(&mut index, false);
        index
            .slots
            .iter()
            .map(|(name, slot)| (name.clone(), slot * SLOT))
            .collect()
    }

    /// The value in `region` of the slot at `base`.
    pub fn read(&self, base: u64, region: Region) -> Option<Vec<u8>> {
        records::read(&self.file, base, region)
    }

    /// Writes `value` in `region` of the slot at `base`.
    pub fn write(&self, base: u64, region: Region, value: &[u8]) -> Result<(), StoreError> {
        records::write(&self.file, &self.path, base, region, value)
    }

    fn held(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lease of the slot at `base` for this process; `false` when it is held already
    /// (by this process or another, directly or handed to a child).
    pub fn take(&self, base: u64) -> io::Result<bool> {
        let n = base / SLOT;
        let mut held = self.held();
        if held.contains(&n) {
            return Ok(false);
        }
        match ofd_lock(&self.file, libc::F_OFD_SETLK, lease_byte(n)?, libc::F_WRLCK) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
                return Ok(false)
            }
            Err(e) => return Err(e),
        }
        // Taking the first byte keeps every other taker out; a child holding the second was
        // handed the lease, and it is still theirs.
        if is_locked(&self.file, handed_byte(n)?)? {
            ofd_lock(&self.file, libc::F_OFD_SETLK, lease_byte(n)?, libc::F_UNLCK)?;
            return Ok(false);
        }
        held.insert(n);
        Ok(true)
    }

    /// Lets go of the lease of the slot at `base` that this process holds through the table.
    pub fn let_go(&self, base: u64) -> io::Result<()> {
        let n = base / SLOT;
        let mut held = self.held();
        if held.remove(&n) {
            ofd_lock(&self.file, libc::F_OFD_SETLK, lease_byte(n)?, libc::F_UNLCK)?;
        }
        Ok(())
    }

    /// A description of the table of its own, holding the handed lease of the slot at `base`
    /// (the process holding the lease hands it to a child through it), or holding it already
    /// (a child that inherited it).
    pub fn hold_handed(&self, file: &File, base: u64) -> io::Result<()> {
        ofd_lock(
            file,
            libc::F_OFD_SETLK,
            handed_byte(base / SLOT)?,
            libc::F_WRLCK,
        )
    }

    /// Lets go of the handed lease of the slot at `base` that `file` holds.
    pub fn let_go_handed(&self, file: &File, base: u64) -> io::Result<()> {
        ofd_lock(
            file,
            libc::F_OFD_SETLK,
            handed_byte(base / SLOT)?,
            libc::F_UNLCK,
        )
    }

    /// Whether the lease of the slot at `base` is held: by this process, another, or a child
    /// it was handed to.
    pub fn is_held(&self, base: u64) -> io::Result<bool> {
        let n = base / SLOT;
        if self.held().contains(&n) {
            return Ok(true);
        }
        Ok(is_locked(&self.file, lease_byte(n)?)? || is_locked(&self.file, handed_byte(n)?)?)
    }

    fn lock_claims(&self, cmd: libc::c_int, kind: libc::c_int) -> io::Result<()> {
        ofd_lock(&self.file, cmd, CLAIM_AT, kind)
    }
}

/// The bytes of slot `n`'s lease.
fn lease_byte(n: u64) -> io::Result<i64> {
    byte(LEASE_AT, n)
}

fn handed_byte(n: u64) -> io::Result<i64> {
    byte(HANDED_AT, n)
}

fn byte(from: i64, n: u64) -> io::Result<i64> {
    i64::try_from(n)
        .ok()
        .filter(|n| *n < HANDED_AT - LEASE_AT)
        .map(|n| from + n)
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "the member table is full"))
}

/// Whether a description other than `file` holds a lock on the byte at `at`.
fn is_locked(file: &File, at: i64) -> io::Result<bool> {
    let mut query = lock_request(at, libc::F_WRLCK);
    // SAFETY: F_OFD_GETLK reads and writes only the flock struct we own; it takes no lock.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut query) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i32::from(query.l_type) != libc::F_UNLCK)
}

/// A request of type `kind` for the one byte at `at`.
///
/// libc's `fcntl`, not rustix's `fcntl_lock`: that takes process-associated locks (`F_SETLK`),
/// which a child cannot inherit and which any close in the process drops, and it cannot ask who
/// holds a lock (`F_OFD_GETLK`); a lease needs open-file-description locks.
fn lock_request(at: i64, kind: libc::c_int) -> libc::flock {
    // SAFETY: flock is plain old data; all-zero is a valid value (l_pid must be 0 for OFD locks).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    // The lock types are 0..=2, so the narrowing cannot lose anything.
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = at;
    lock.l_len = 1;
    lock
}

/// `fcntl(file, cmd, …)` for the OFD lock commands that do not report back, on the byte at `at`.
fn ofd_lock(file: &File, cmd: libc::c_int, at: i64, kind: libc::c_int) -> io::Result<()> {
    let lock = lock_request(at, kind);
    loop {
        // SAFETY: the OFD lock commands read only the flock struct, which outlives the call.
        if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &lock) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn ok<T>(r: Result<T, StoreError>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_name_keeps_its_slot_and_another_table_finds_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(ok(open(dir.path(), false)).is_none(), "nothing made");
        let table = ok(open(dir.path(), true)).unwrap_or_else(|| panic!("made"));
        assert_eq!(ok(table.slot("bob", false)), None);
        assert_eq!(ok(table.slot("bob", true)), Some(0));
        assert_eq!(ok(table.slot("amy", true)), Some(SLOT));
        assert_eq!(ok(table.slot("bob", true)), Some(0));
        // Another process's table: a description and an index of its own.
        let other = Table::new(
            File::options()
                .read(true)
                .write(true)
                .open(table.path())
                .unwrap_or_else(|e| panic!("{e}")),
            table.path().to_path_buf(),
        );
        assert_eq!(ok(other.slot("amy", false)), Some(SLOT));
        assert_eq!(ok(other.slot("cy", true)), Some(2 * SLOT));
        assert_eq!(ok(table.slot("cy", false)), Some(2 * SLOT));
        let mut names = table.members();
        names.sort();
        assert_eq!(
            names,
            [
                ("amy".into(), SLOT),
                ("bob".into(), 0),
                ("cy".into(), 2 * SLOT)
            ]
        );
        // One file, whatever the number of members.
        let files = fs::read_dir(dir.path()).map_or(0, Iterator::count);
        assert_eq!(files, 1);
    }

    #[test]
    fn a_half_written_slot_is_gone_past_by_readers_and_left_for_good_by_the_next_claim() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let table = ok(open(dir.path(), true)).unwrap_or_else(|| panic!("made"));
        assert_eq!(ok(table.slot("bob", true)), Some(0));
        // A claimer died in the middle of slot 1; slot 2 was claimed after it by another.
        table
            .file()
            .write_all_at(b"troupe-presence 3 00", SLOT)
            .unwrap_or_else(|e| panic!("{e}"));
        ok(table.write(2 * SLOT, NAME, b"cy"));
        let reader = Table::new(
            File::open(table.path()).unwrap_or_else(|e| panic!("{e}")),
            table.path().to_path_buf(),
        );
        assert_eq!(ok(reader.slot("cy", false)), Some(2 * SLOT));
        assert_eq!(reader.index().known, 1, "not trusted past the torn slot");
        assert_eq!(ok(table.slot("dee", true)), Some(3 * SLOT));
        assert_eq!(table.index().known, 4);
    }

    #[test]
    fn a_lease_is_held_once_across_tables_and_while_handed_to_a_child() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let table = ok(open(dir.path(), true)).unwrap_or_else(|| panic!("made"));
        let rw = || {
            File::options()
                .read(true)
                .write(true)
                .open(table.path())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        // Another process's table.
        let other = Table::new(rw(), table.path().to_path_buf());
        let bob = ok(table.slot("bob", true)).unwrap_or_default();
        let amy = ok(table.slot("amy", true)).unwrap_or_default();
        let io = |r: io::Result<bool>| r.unwrap_or_else(|e| panic!("{e}"));
        assert!(io(table.take(bob)));
        assert!(!io(table.take(bob)), "once in this process");
        assert!(!io(other.take(bob)), "and in another");
        assert!(io(table.is_held(bob)) && io(other.is_held(bob)));
        assert!(!io(other.is_held(amy)));
        assert!(io(other.take(amy)), "a neighbour's lease is its own");
        // Handed to a child: the child's description holds it once this process lets go.
        let child = rw();
        table
            .hold_handed(&child, bob)
            .unwrap_or_else(|e| panic!("{e}"));
        table.let_go(bob).unwrap_or_else(|e| panic!("{e}"));
        assert!(io(table.is_held(bob)) && io(other.is_held(bob)));
        assert!(!io(other.take(bob)), "still the child's");
        assert!(!io(table.take(bob)));
        drop(child);
        assert!(!io(other.is_held(bob)));
        assert!(io(other.take(bob)));
        assert!(io(table.is_held(bob)));
        // A closed table lets go of all it held.
        drop(other);
        assert!(!io(table.is_held(bob)) && !io(table.is_held(amy)));
    }
}
