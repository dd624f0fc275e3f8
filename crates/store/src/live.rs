//! Leases: an agent is alive while a live process holds its lease. [`Lease`] is the
//! backend-neutral handle (a backend keeps what it needs in a boxed [`LeaseGuard`]); the rest of
//! this module is the file backend's lease, an exclusive lock on `live/<agent>.lock` in the
//! team's directory. The kernel drops the lock when the process ends, however it ends, so a
//! crashed agent never blocks its successor, and no pid is ever probed (`kill(pid, 0)` is fooled
//! by zombies and reused pids). The holder writes its pid and start time into the file, so
//! whoever is refused can be told who holds it. The file is the member's one file: its
//! presence records live in it too (`file::member_file` has the layout); the lock covers it
//! whole and takes nothing from them.
//!
//! The lock is an open-file-description lock (Linux `F_OFD_SETLK`), not `flock`, because
//! liveness must be *asked about* without being taken. `F_OFD_GETLK` reports a conflicting lock
//! and takes nothing; with `flock` the only question is a try-lock, which holds the lock for a
//! moment, and a process taking its lease in that moment (a supervisor restarting a killed
//! teammate) would be refused as "already running". OFD locks also belong to the open file
//! description rather than the process, unlike classic POSIX locks: closing some other
//! descriptor of the file (a probe's) never drops them; two descriptions conflict even within
//! one process (the lead holds each in-process teammate's lease next to its own); and a
//! description a child inherits keeps the lock for the child, which is how the lead hands a
//! teammate process its lease with no moment when nobody holds it ([`Lease::pass_to_child`]).

use crate::error::check_agent;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use troupe_protocol::now_ms;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::file::member_file;

/// Who holds a lease, as the holder recorded itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// The holder's process id (for people to act on; never probed).
    pub pid: u32,
    /// When it took the lease, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// The machine the holder runs on, when the backend spans machines (the pid means
    /// something only there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The holder process's identity beyond its pid (boot and start time, see
    /// [`crate::proc_stamp`]), so a successor on the same host can tell it is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

impl LeaseHolder {
    /// True when the holder runs on this machine (or did not say where: the file backend's
    /// holders always do), so its pid means a process here that may be signalled.
    pub fn is_on_this_host(&self) -> bool {
        self.host
            .as_deref()
            .is_none_or(|h| host_name().as_deref() == Some(h))
    }

    /// This process, now, on this machine.
    pub fn this_process() -> LeaseHolder {
        LeaseHolder::for_pid(std::process::id())
    }

    /// Process `pid` of this machine (a child a lease is handed to), now.
    pub fn for_pid(pid: u32) -> LeaseHolder {
        LeaseHolder {
            pid,
            started_ms: now_ms(),
            host: host_name(),
            process: crate::proc_stamp::of_pid(pid),
        }
    }

    /// True when the holder ran on this machine and its process is certainly gone (checked
    /// against `/proc`: no such pid, a zombie, or the pid reused by a process started at
    /// another time): its lease may be taken over at once. A holder elsewhere, or one that
    /// recorded no process identity, is never taken for gone.
    pub fn is_gone(&self) -> bool {
        self.host.is_some()
            && self.is_on_this_host()
            && self
                .process
                .as_deref()
                .is_some_and(|stamp| crate::proc_stamp::is_gone(self.pid, stamp))
    }
}

/// The variable that names this machine instead of its host name: for machines that share one
/// (containers all called `localhost`), and for tests that play several hosts on one.
pub const HOST_NAME_VAR: &str = "TROUPE_HOST_NAME";

/// This machine's name: `TROUPE_HOST_NAME`, else its host name, if the OS tells it.
pub fn host_name() -> Option<String> {
    if let Some(name) = std::env::var(HOST_NAME_VAR).ok().filter(|n| !n.is_empty()) {
        return Some(name);
    }
    let name = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    (!name.is_empty()).then_some(name)
}

impl std::fmt::Display for LeaseHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = i128::from(self.started_ms) * 1_000_000;
        let when = time::OffsetDateTime::from_unix_timestamp_nanos(started)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| format!("{} ms after the epoch", self.started_ms));
        match &self.host {
            Some(host) => write!(f, "pid {} on {host}, started {when}", self.pid),
            None => write!(f, "pid {}, started {when}", self.pid),
        }
    }
}

/// What a probe of a lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// A live process holds it: the agent is alive. Who, as the holder recorded itself; `None`
    /// while it is still writing that.
    Held(Option<LeaseHolder>),
    /// Nobody holds it: no process of the agent is alive.
    Free,
}

impl LeaseState {
    /// True when a live process holds the lease.
    pub fn is_held(&self) -> bool {
        matches!(self, LeaseState::Held(_))
    }
}

/// A lease being let go ([`LeaseGuard::release`]).
pub type Releasing = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What a backend keeps for one held lease; dropping it lets the lease go.
pub trait LeaseGuard: Send + Sync + std::fmt::Debug {
    /// Lets the lease go; the future resolves once others see it free (a networked backend
    /// waits, briefly, for the server to delete it). Dropping the guard lets go too, without
    /// anyone to wait for that inside an async runtime.
    fn release(self: Box<Self>) -> Releasing;

    /// Makes the process `cmd` starts able to take the lease over; returns what the child
    /// passes to [`crate::LivenessStore::adopt_lease`] (the file backend: an inherited
    /// descriptor's number; a networked backend: a token).
    fn pass_to_child(&self, cmd: &mut Command) -> String;

    /// Lets go of this process's hold without releasing the lease: the child `child_pid`
    /// that was handed it takes it over.
    fn hand_over(self: Box<Self>, child_pid: u32);
}

/// A held lease; the agent counts as alive until it is dropped or its process ends.
#[derive(Debug)]
pub struct Lease {
    agent: String,
    place: String,
    holder: LeaseHolder,
    guard: Box<dyn LeaseGuard>,
}

impl Lease {
    /// A lease a backend took: `place` says where it is kept (for people), `guard` holds it.
    pub fn new(
        agent: &str,
        place: String,
        holder: LeaseHolder,
        guard: Box<dyn LeaseGuard>,
    ) -> Lease {
        Lease {
            agent: agent.to_string(),
            place,
            holder,
            guard,
        }
    }

    /// Where the lease is kept, for people (the lock file, a key on a server).
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Whose lease it is.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// What this process recorded as the holder.
    pub fn holder(&self) -> &LeaseHolder {
        &self.holder
    }

    /// Makes the process `cmd` starts able to take over this lease. Returns the handoff the
    /// child passes to [`crate::LivenessStore::adopt_lease`]. Once the child runs,
    /// [`Lease::hand_over`] lets go here without releasing; should the child die after that,
    /// the lease goes with it.
    pub fn pass_to_child(&self, cmd: &mut Command) -> String {
        self.guard.pass_to_child(cmd)
    }

    /// Lets go of this process's hold without releasing: the child `child_pid` that was handed
    /// the lease ([`Lease::pass_to_child`]) holds it from now on.
    pub fn hand_over(self, child_pid: u32) {
        self.guard.hand_over(child_pid);
    }

    /// Lets the lease go and returns once others see the agent not alive. Dropping a lease
    /// lets it go too, but inside an async runtime a networked backend's release then goes on
    /// in the background: a caller that goes on to act on "not alive" releases instead.
    pub async fn release(self) {
        self.guard.release().await;
    }
}

/// Lease files this process holds open, by path: the member's other records (presence, the
/// roster index) are written through them instead of opening the file again each time.
static HELD: Mutex<Option<HashMap<PathBuf, Weak<File>>>> = Mutex::new(None);

fn held() -> MutexGuard<'static, Option<HashMap<PathBuf, Weak<File>>>> {
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lease file at `path`, when this process holds it open.
pub(crate) fn held_file(path: &Path) -> Option<Arc<File>> {
    held().as_ref()?.get(path)?.upgrade()
}

/// Forgets `file` as the open lease file at `path` (unless another took its place).
fn forget_held(path: &Path, file: &Arc<File>) {
    if let Some(map) = held().as_mut() {
        if map
            .get(path)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(file)))
        {
            map.remove(path);
        }
    }
}

/// The file backend's hold on a lease: the open lock file.
#[derive(Debug)]
struct FileLease {
    file: Arc<File>,
    path: PathBuf,
    /// Set by `hand_over`: a child holds the lock now, so dropping must not unlock it.
    handed_over: bool,
}

impl LeaseGuard for FileLease {
    fn release(self: Box<Self>) -> Releasing {
        // Unlocking is immediate: done by the time the future is made.
        drop(self);
        Box::pin(std::future::ready(()))
    }

    fn pass_to_child(&self, cmd: &mut Command) -> String {
        let fd = self.file.as_raw_fd();
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
        if let Err(e) = write_holder(&self.file, &self.path, &holder) {
            tracing::debug!(error = %e, "could not record the lease's new holder");
        }
        forget_held(&self.path, &self.file);
        self.handed_over = true;
    }
}

impl Drop for FileLease {
    fn drop(&mut self) {
        if self.handed_over {
            return; // closing our descriptor leaves the child's lock alone
        }
        forget_held(&self.path, &self.file);
        // Closing the file releases the lock too, unless a process forked at this moment still
        // shares the descriptor until its exec; unlocking first makes the release immediate.
        // An unlock error cannot be acted on here.
        let _ = ofd_lock(&self.file, libc::F_OFD_SETLK, libc::F_UNLCK);
    }
}

/// The lock file of `agent`'s lease in a team directory.
pub fn lease_path(team_dir: &Path, agent: &str) -> PathBuf {
    team_dir.join("live").join(format!("{agent}.lock"))
}

/// Takes `agent`'s lease in the team directory `team_dir` (`.troupe/teams/<team>`), without
/// waiting: while another live process holds it, the answer is [`StoreError::LeaseHeld`]
/// naming that process.
pub fn acquire_lease(team_dir: &Path, agent: &str) -> Result<Lease, StoreError> {
    check_agent(agent)?;
    let dir = team_dir.join("live");
    fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
    let path = lease_path(team_dir, agent);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(StoreError::io("open lease file", &path))?;
    take(file, path, agent, team_dir)
}

/// Takes over the lease of `agent` that this process inherited as descriptor `handoff` (its
/// number, as [`Lease::pass_to_child`] returned it) from the process that started it. The descriptor must be that inherited
/// one, owned by nothing else in this process; it is checked to be `agent`'s lock file before
/// it is used, and closed on exec from now on, so the tools this process starts never hold
/// the lease. The holder record is rewritten with this process's pid.
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
    let path = lease_path(team_dir, agent);
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
    // SAFETY: the descriptor is open and is the lease file (checked above); by this function's
    // contract it was inherited for this purpose and nothing else in the process owns it.
    let file = unsafe { File::from_raw_fd(fd) };
    if let Err(e) = rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC) {
        return Err(StoreError::io("set close-on-exec on", &path)(e.into()));
    }
    take(file, path, agent, team_dir)
}

/// Whether `agent`'s lease is held, asked without taking it: a process acquiring the lease at
/// the same moment is never disturbed. No file is created for an agent that never held one.
pub fn probe_lease(team_dir: &Path, agent: &str) -> Result<LeaseState, StoreError> {
    check_agent(agent)?;
    let path = lease_path(team_dir, agent);
    if let Some(file) = held_file(&path) {
        // This process holds it: no need to open the file (an open and a close of a locked
        // file) to ask the kernel, which would not show this process's own lock through the
        // file description holding it anyway.
        return Ok(LeaseState::Held(read_holder(&file)));
    }
    probe_by_file(&path)
}

/// Asks the kernel whether the lease file at `path` is locked, through a file description of
/// its own (so any holder's lock shows, another process's or one of this process's).
fn probe_by_file(path: &Path) -> Result<LeaseState, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(LeaseState::Free),
        Err(e) => return Err(StoreError::io("open lease file", path)(e)),
    };
    let mut query = whole_file(libc::F_WRLCK);
    // SAFETY: F_OFD_GETLK reads and writes only the flock struct we own; it takes no lock.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut query) } != 0 {
        return Err(StoreError::io("probe the lock on", path)(
            io::Error::last_os_error(),
        ));
    }
    if i32::from(query.l_type) == libc::F_UNLCK {
        Ok(LeaseState::Free)
    } else {
        Ok(LeaseState::Held(read_holder(&file)))
    }
}

/// Locks `file` (its whole length) for `agent` and records this process as the holder.
fn take(file: File, path: PathBuf, agent: &str, team_dir: &Path) -> Result<Lease, StoreError> {
    match ofd_lock(&file, libc::F_OFD_SETLK, libc::F_WRLCK) {
        Ok(()) => {}
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
            return Err(StoreError::LeaseHeld {
                agent: agent.to_string(),
                team: team_name(team_dir),
                holder: read_holder(&file).map(Box::new),
                place: path.display().to_string(),
            })
        }
        Err(e) => return Err(StoreError::io("lock", &path)(e)),
    }
    let holder = LeaseHolder::this_process();
    // A previous holder's record may still be there (it died); ours replaces it.
    write_holder(&file, &path, &holder)?;
    let place = path.display().to_string();
    let file = Arc::new(file);
    held()
        .get_or_insert_with(HashMap::new)
        .insert(path.clone(), Arc::downgrade(&file));
    let guard = FileLease {
        file,
        path,
        handed_over: false,
    };
    Ok(Lease::new(agent, place, holder, Box::new(guard)))
}

/// Replaces the holder record in the lock file, in place (the member's presence records
/// follow it). No fsync: the record matters only while the lock is held, and readers share the
/// page cache.
fn write_holder(file: &File, path: &Path, holder: &LeaseHolder) -> Result<(), StoreError> {
    let json = serde_json::to_vec(holder).map_err(|source| StoreError::Serialize {
        what: "lease holder",
        source,
    })?;
    member_file::write(file, path, member_file::HOLDER_AT, &json)
}

/// A lock request of type `kind` over the whole file, however long it grows.
///
/// The lease's locks are libc's `fcntl`: rustix's `fcntl_lock` takes process-associated locks
/// (`F_SETLK`), which a child cannot inherit and which any close in the process drops, and it
/// cannot ask who holds a lock (`F_OFD_GETLK`); a lease needs open-file-description locks.
fn whole_file(kind: libc::c_int) -> libc::flock {
    // SAFETY: flock is plain old data; all-zero is a valid value (l_pid must be 0 for OFD locks).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    // The lock types are 0..=2, so the narrowing cannot lose anything.
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 0;
    lock.l_len = 0;
    lock
}

/// `fcntl(file, cmd, whole_file(kind))` for the OFD lock commands that do not report back.
fn ofd_lock(file: &File, cmd: libc::c_int, kind: libc::c_int) -> io::Result<()> {
    let lock = whole_file(kind);
    // SAFETY: the OFD lock commands read only the flock struct, which outlives the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &lock) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The holder recorded in a lease file; `None` when it cannot be read (the holder is still
/// writing it, or it is damaged). An older version wrote only the holder's JSON line.
fn read_holder(file: &File) -> Option<LeaseHolder> {
    if let Some(json) = member_file::read(file, member_file::HOLDER_AT) {
        return serde_json::from_slice(&json).ok();
    }
    let mut line = [0u8; 512];
    let n = file.read_at(&mut line, 0).ok()?;
    let end = line[..n].iter().position(|b| *b == b'\n')?;
    serde_json::from_slice(&line[..end]).ok()
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
    fn a_held_lease_is_answered_from_its_handle_as_the_kernel_answers() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let team = dir.path().join("teams").join("blue");
        let lease = acquire_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}"));
        let path = lease_path(&team, "bob");
        let held = LeaseState::Held(Some(lease.holder().clone()));
        assert!(held_file(&path).is_some());
        assert_eq!(
            probe_lease(&team, "bob").unwrap_or_else(|e| panic!("{e}")),
            held
        );
        assert_eq!(probe_by_file(&path).unwrap_or_else(|e| panic!("{e}")), held);
        drop(lease);
        assert!(held_file(&path).is_none());
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
        assert_eq!(
            first.place(),
            team.join("live/lead.lock").display().to_string()
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
    fn the_refusal_names_pid_and_start_time() {
        let holder = LeaseHolder {
            pid: 4242,
            started_ms: 1_700_000_000_000,
            host: None,
            process: None,
        };
        let err = StoreError::LeaseHeld {
            agent: "lead".into(),
            team: "blue".into(),
            place: "/w/.troupe/teams/blue/live/lead.lock".into(),
            holder: Some(Box::new(holder)),
        };
        let text = err.to_string();
        assert!(
            text.contains("pid 4242") && text.contains("2023-11-14T22:13:20Z"),
            "{text}"
        );
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
