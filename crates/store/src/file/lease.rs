//! The file backend's lease: an exclusive lock on the member's byte of the team's member table,
//! `members` in its folder (`slots` says which byte, and why a process takes all of its leases
//! through one description). The holder writes its pid and start time into the member's slot,
//! where its presence records live too (`records` has the layout).
//!
//! The lock is an open-file-description lock (Linux `F_OFD_SETLK`), not `flock`, because
//! liveness must be *asked about* without being taken, and because one file holds every
//! member's lease. `F_OFD_GETLK` reports a conflicting lock and takes nothing; with `flock` the
//! only question is a try-lock, which holds the lock for a moment, and a process taking its
//! lease in that moment (a supervisor restarting a killed teammate) would be refused as "already
//! running". OFD locks also belong to the open file description rather than the process, unlike
//! classic POSIX locks: closing some other descriptor of the table (a probe's) never drops a
//! lease; two descriptions conflict even within one process; and a description a child inherits
//! keeps the lock for the child, which is how the lead hands a teammate process its lease with
//! no moment when nobody holds it ([`Lease::pass_to_child`]).
//!
//! An older troupe locked a file of the member's own, `live/<agent>.lock`; while such a file
//! exists, a probe and a taker ask its lock too, so a member an older process still runs is
//! not taken for gone.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};

use super::records;
use super::slots::{self, Table};
use crate::error::{check_agent, StoreError};
use crate::live::{Lease, LeaseGuard, LeaseHolder, LeaseState, Releasing};

/// The file backend's hold on a lease: the member table's lock for the member's slot, taken
/// through the table's description (this process's leases) or a description of its own (a
/// lease inherited from the process that started this one).
#[derive(Debug)]
struct FileLease {
    table: Arc<Table>,
    base: u64,
    own: Option<File>,
    /// The description a child inherits the lease through, once `pass_to_child` made it.
    for_child: Mutex<Option<File>>,
    /// Set by `hand_over`: a child holds the lock now, so dropping must not unlock it.
    handed_over: bool,
}

impl FileLease {
    /// The descriptor a child inherits the lease through: this lease's own description, or
    /// one made for the child that holds the lease beside this process's hold.
    fn child_fd(&self) -> RawFd {
        if let Some(own) = &self.own {
            return own.as_raw_fd();
        }
        let mut for_child = self
            .for_child
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if for_child.is_none() {
            let made = OpenOptions::new()
                .read(true)
                .write(true)
                .open(self.table.path())
                .and_then(|file| self.table.hold_handed(&file, self.base).map(|()| file));
            match made {
                Ok(file) => *for_child = Some(file),
                // The child then fails to start: the descriptor it is to keep is not open.
                Err(e) => tracing::warn!(error = %e, "cannot hand the lease to a child"),
            }
        }
        for_child.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }
}

impl LeaseGuard for FileLease {
    fn release(self: Box<Self>) -> Releasing {
        // Unlocking is immediate: done by the time the future is made.
        drop(self);
        Box::pin(std::future::ready(()))
    }

    fn pass_to_child(&self, cmd: &mut Command) -> String {
        let fd = self.child_fd();
        // libc in the forked child: async-signal-safe calls on a raw descriptor number (a
        // rustix BorrowedFd would need an unsafe borrow of it all the same).
        let keep_open = move || {
            // SAFETY: runs in the forked child before exec; fcntl is async-signal-safe and only
            // changes the child's own descriptor flags.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            // SAFETY: as above.
            if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        };
        // SAFETY: the closure allocates nothing and calls only async-signal-safe functions.
        unsafe {
            cmd.pre_exec(keep_open);
        }
        fd.to_string()
    }

    fn hand_over(mut self: Box<Self>, child_pid: u32) {
        // The holder record names the child from now on (the child rewrites it when it adopts
        // the lease), so nobody takes this process for the agent's in the meantime.
        let holder = LeaseHolder::for_pid(child_pid);
        if let Err(e) = write_holder(&self.table, self.base, &holder) {
            tracing::debug!(error = %e, "could not record the lease's new holder");
        }
        // The child's description holds it now; this process's hold goes.
        if self.own.is_none() {
            if let Err(e) = self.table.let_go(self.base) {
                tracing::debug!(error = %e, "could not let go of a lease handed over");
            }
        }
        self.handed_over = true;
    }
}

impl Drop for FileLease {
    fn drop(&mut self) {
        if self.handed_over {
            return; // closing our descriptors leaves the child's lock alone
        }
        // Closing a description releases its locks too, unless a process forked at this moment
        // still shares it until its exec; unlocking first makes the release immediate. An
        // unlock error cannot be acted on here.
        let for_child = self
            .for_child
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for file in self.own.iter().chain(for_child.iter()) {
            let _ = self.table.let_go_handed(file, self.base);
        }
        if self.own.is_none() {
            let _ = self.table.let_go(self.base);
        }
    }
}

/// The team's member table, which holds every member's lease (`team_dir/members`).
pub fn members_path(team_dir: &Path) -> PathBuf {
    team_dir.join(slots::FILE)
}

/// An older troupe's lock file of `agent`'s lease.
fn legacy_path(team_dir: &Path, agent: &str) -> PathBuf {
    team_dir
        .join(slots::LEGACY_LIVE)
        .join(format!("{agent}.lock"))
}

/// Takes `agent`'s lease in the team directory `team_dir` (`.troupe/teams/<team>`), without
/// waiting: while another live process holds it, the answer is [`StoreError::LeaseHeld`]
/// naming that process.
pub fn acquire_lease(team_dir: &Path, agent: &str) -> Result<Lease, StoreError> {
    check_agent(agent)?;
    let legacy = legacy_path(team_dir, agent);
    if let LeaseState::Held(holder) = probe_legacy(&legacy)? {
        return Err(StoreError::LeaseHeld {
            agent: agent.to_string(),
            team: team_name(team_dir),
            holder: holder.map(Box::new),
            place: legacy.display().to_string(),
        });
    }
    let path = members_path(team_dir);
    let table = slots::open(team_dir, true)?
        .ok_or_else(|| StoreError::io("open", &path)(ErrorKind::NotFound.into()))?;
    let base = table
        .slot(agent, true)?
        .ok_or_else(|| StoreError::io("claim a slot in", &path)(ErrorKind::NotFound.into()))?;
    let taken = table
        .take(base)
        .map_err(StoreError::io("lock", table.path()))?;
    if !taken {
        return Err(held_by_another(&table, base, agent, team_dir));
    }
    hold(table, base, None, agent)
}

/// Takes over the lease of `agent` that this process inherited as descriptor `handoff` (its
/// number, as [`Lease::pass_to_child`] returned it) from the process that started it. The
/// descriptor must be that inherited one, owned by nothing else in this process; it is checked
/// to be the team's member table before it is used, and closed on exec from now on, so the tools
/// this process starts never hold the lease. The holder record is rewritten with this process's
/// pid.
pub fn adopt_lease(team_dir: &Path, agent: &str, handoff: &str) -> Result<Lease, StoreError> {
    check_agent(agent)?;
    let not_it = |reason: String| StoreError::LeaseNotInherited {
        agent: agent.to_string(),
        handoff: handoff.to_string(),
        reason,
    };
    let fd: RawFd = handoff
        .parse()
        .map_err(|_| not_it("it is not a descriptor number".into()))?;
    let path = members_path(team_dir);
    let expected = fs::metadata(&path).map_err(StoreError::io("read", &path))?;
    // Not rustix's fstat: it takes a BorrowedFd, which promises that the number is an open
    // descriptor — the very thing asked here.
    // SAFETY: fstat only writes the zero-initialised struct we own; a descriptor that is not
    // open is reported as EBADF.
    let stat = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut stat) == 0).then_some(stat)
    };
    let Some(stat) = stat else {
        return Err(not_it(io::Error::last_os_error().to_string()));
    };
    if stat.st_dev != expected.dev() || stat.st_ino != expected.ino() {
        return Err(not_it(format!("it is not {}", path.display())));
    }
    let table = slots::open(team_dir, false)?
        .ok_or_else(|| not_it(format!("{} is gone", path.display())))?;
    let base = table
        .slot(agent, false)?
        .ok_or_else(|| not_it(format!("{agent} has no slot in {}", path.display())))?;
    // SAFETY: the descriptor is open and is the member table (checked above); by this
    // function's contract it was inherited for this purpose and nothing else in the process
    // owns it.
    let file = unsafe { File::from_raw_fd(fd) };
    if let Err(e) = rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC) {
        return Err(StoreError::io("set close-on-exec on", &path)(e.into()));
    }
    // The inherited description holds the lease already, and taking it again is a no-op; one
    // that does not is refused while anyone else holds it.
    match table.hold_handed(&file, base) {
        Ok(()) => {}
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
            return Err(held_by_another(&table, base, agent, team_dir))
        }
        Err(e) => return Err(StoreError::io("lock", table.path())(e)),
    }
    hold(table, base, Some(file), agent)
}

/// Whether `agent`'s lease is held, asked without taking it: a process acquiring the lease at
/// the same moment is never disturbed. Nothing is created for an agent that never held one.
pub fn probe_lease(team_dir: &Path, agent: &str) -> Result<LeaseState, StoreError> {
    check_agent(agent)?;
    if let Some(table) = slots::open(team_dir, false)? {
        if let Some(base) = table.slot(agent, false)? {
            let locked = table
                .is_held(base)
                .map_err(StoreError::io("probe the lock in", table.path()))?;
            if locked {
                return Ok(LeaseState::Held(read_holder(&table, base)));
            }
        }
    }
    probe_legacy(&legacy_path(team_dir, agent))
}

/// Asks the kernel whether an older troupe's lease file at `path` is locked.
fn probe_legacy(path: &Path) -> Result<LeaseState, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(LeaseState::Free),
        Err(e) => return Err(StoreError::io("open lease file", path)(e)),
    };
    // SAFETY: flock is plain old data; all-zero is a valid value (l_pid must be 0 for OFD
    // locks), and l_len 0 asks about the whole file.
    let mut query: libc::flock = unsafe { std::mem::zeroed() };
    query.l_type = libc::F_WRLCK as libc::c_short;
    query.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: F_OFD_GETLK reads and writes only the flock struct we own; it takes no lock.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut query) } != 0 {
        return Err(StoreError::io("probe the lock on", path)(
            io::Error::last_os_error(),
        ));
    }
    if i32::from(query.l_type) == libc::F_UNLCK {
        return Ok(LeaseState::Free);
    }
    // The older file's holder: a record at its start, or a JSON line before that.
    let holder = records::read(&file, 0, records::LEGACY_HOLDER).or_else(|| {
        let mut line = [0u8; 512];
        let n = file.read_at(&mut line, 0).ok()?;
        let end = line[..n].iter().position(|b| *b == b'\n')?;
        Some(line[..end].to_vec())
    });
    Ok(LeaseState::Held(
        holder.and_then(|json| serde_json::from_slice(&json).ok()),
    ))
}

/// Where `agent`'s lease is kept, for people.
fn place(table: &Table, agent: &str) -> String {
    format!("{} ({agent}'s slot)", table.path().display())
}

/// The refusal of `agent`'s lease, which another holds.
fn held_by_another(table: &Table, base: u64, agent: &str, team_dir: &Path) -> StoreError {
    StoreError::LeaseHeld {
        agent: agent.to_string(),
        team: team_name(team_dir),
        holder: read_holder(table, base).map(Box::new),
        place: place(table, agent),
    }
}

/// The lease of `agent`, just taken (through `own`, or the table): records this process as
/// the holder.
fn hold(table: Arc<Table>, base: u64, own: Option<File>, agent: &str) -> Result<Lease, StoreError> {
    let holder = LeaseHolder::this_process();
    // A previous holder's record may still be there (it died); ours replaces it.
    let guard = FileLease {
        table,
        base,
        own,
        for_child: Mutex::new(None),
        handed_over: false,
    };
    write_holder(&guard.table, base, &holder)?;
    let place = place(&guard.table, agent);
    Ok(Lease::new(agent, place, holder, Box::new(guard)))
}

/// Replaces the holder record in the member's slot, in place. No fsync: the record matters
/// only while the lock is held, and readers share the page cache.
fn write_holder(table: &Table, base: u64, holder: &LeaseHolder) -> Result<(), StoreError> {
    let json = serde_json::to_vec(holder).map_err(|source| StoreError::Serialize {
        what: "lease holder",
        source,
    })?;
    table.write(base, records::HOLDER, &json)
}

/// The holder recorded in the slot at `base`; `None` when it cannot be read (the holder is
/// still writing it, or it is damaged).
fn read_holder(table: &Table, base: u64) -> Option<LeaseHolder> {
    serde_json::from_slice(&table.read(base, records::HOLDER)?).ok()
}

/// The team's name: the last component of its directory.
fn team_name(team_dir: &Path) -> String {
    team_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lease_is_told_by_the_table_in_this_process_too_and_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let team = dir.path().join("teams").join("blue");
        assert_eq!(
            probe_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}")),
            LeaseState::Free
        );
        assert!(!members_path(&team).exists(), "a probe creates nothing");
        let lease = acquire_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}"));
        let held = LeaseState::Held(Some(lease.holder().clone()));
        assert_eq!(
            probe_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}")),
            held
        );
        assert_eq!(
            probe_lease(&team, "amy").unwrap_or_else(|e| panic!("{e}")),
            LeaseState::Free
        );
        drop(lease);
        assert_eq!(
            probe_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}")),
            LeaseState::Free
        );
    }

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let team = dir.path().join("teams").join("blue");
        let first = acquire_lease(&team, "lead").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.holder().pid, std::process::id());
        assert!(
            first
                .place()
                .starts_with(&members_path(&team).display().to_string()),
            "{}",
            first.place()
        );
        // OFD locks conflict between open file descriptions, so a second acquisition in the
        // same process stands in for a second process here.
        match acquire_lease(&team, "lead") {
            Err(StoreError::LeaseHeld {
                agent,
                team: name,
                holder,
                ..
            }) => {
                assert_eq!((agent.as_str(), name.as_str()), ("lead", "blue"));
                assert_eq!(holder.as_deref(), Some(first.holder()));
            }
            other => panic!("expected the lease to be held: {other:?}"),
        }
        // Another agent's lease is independent.
        let other = acquire_lease(&team, "alice").unwrap_or_else(|e| panic!("{e}"));
        drop(first);
        let again = acquire_lease(&team, "lead").unwrap_or_else(|e| panic!("{e}"));
        assert!(again.holder().started_ms > 0);
        drop((other, again));
    }

    #[test]
    fn a_member_an_older_troupe_runs_is_held_and_not_taken() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let team = dir.path().join("teams").join("blue");
        let old = legacy_path(&team, "bob");
        fs::create_dir_all(team.join(slots::LEGACY_LIVE)).unwrap_or_else(|e| panic!("{e}"));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&old)
            .unwrap_or_else(|e| panic!("{e}"));
        file.write_all_at(b"{\"pid\":4242,\"started_ms\":1}\n", 0)
            .unwrap_or_else(|e| panic!("{e}"));
        // The older troupe's lock: the whole file.
        // SAFETY: as in `probe_legacy`; F_OFD_SETLK reads only the struct.
        let locked = unsafe {
            let mut lock: libc::flock = std::mem::zeroed();
            lock.l_type = libc::F_WRLCK as libc::c_short;
            libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) == 0
        };
        assert!(locked);
        let state = probe_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&state, LeaseState::Held(Some(h)) if h.pid == 4242),
            "{state:?}"
        );
        match acquire_lease(&team, "bob") {
            Err(StoreError::LeaseHeld { place, .. }) => assert!(place.ends_with("bob.lock")),
            other => panic!("expected the lease to be held: {other:?}"),
        }
        drop(file);
        let lease = acquire_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}"));
        drop(lease);
    }

    #[test]
    fn unsafe_agent_names_are_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            acquire_lease(dir.path(), "../x"),
            Err(StoreError::BadName { .. })
        ));
    }
}
