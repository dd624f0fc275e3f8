//! Finding, killing and reaping what a tool call left behind, from `/proc`.
//!
//! A call's processes are its process group plus every process carrying its marker in the
//! environment it was started with (`TROUPE_TOOL_CALL=<id>`, inherited by every descendant).
//! troupe is the child subreaper, so a descendant whose parent died is re-parented to troupe
//! instead of init: every process of a call stays in troupe's process tree, and only that tree
//! has to be searched.
//!
//! Reaping must never take the exit status of a child tokio (or the team runtime) waits for.
//! troupe's own children are bash shells (each the leader of its own group) and programs left in
//! troupe's group (teammate processes); none of them ever changes its session. So a zombie child
//! that sits in another session, or in a group it does not lead that is not troupe's, was
//! adopted, and nobody else will wait for it.

use rustix::io::Errno;
use rustix::process::{
    getpid, kill_process, kill_process_group, pidfd_open, pidfd_send_signal, waitid, waitpid, Pid,
    PidfdFlags, Signal, WaitId, WaitIdOptions, WaitOptions,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::shared_look::{Busy, Look, Looks};
use std::time::{Duration, Instant};

/// Set once troupe is the child subreaper; before that orphans go to init, so the whole process
/// table is searched.
pub(crate) static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// The pid window opened when troupe became the subreaper: everything it can adopt is in it.
pub(crate) static SINCE_START: OnceLock<Window> = OnceLock::new();

/// The looks at troupe's tree, shared by the calls ending at the same time.
static LOOKS: Looks<Stat> = Looks::new();

/// Serialises reaping: a zombie must be re-checked and reaped with nobody else reaping in between.
static REAP: Mutex<()> = Mutex::new(());

/// How long ending a call may take before troupe gives up on a process (one stuck in the kernel).
const END_DEADLINE: Duration = Duration::from_secs(5);

/// How long after a call started the pid window still bounds its processes (see [`Window`]).
const WINDOW_TRUST: Duration = Duration::from_millis(50);

/// Where the kernel's pid counter stood when a call started.
///
/// Reading `/proc/<pid>/stat` costs about 14 µs a process, so scanning a busy machine's whole
/// process table after every call would cost milliseconds. A call's processes are all created
/// after it starts, and pids are handed out in increasing order (wrapping at `pid_max`), so for a
/// short call only the pids in (counter at start, counter now] need a look. Wrapping all the way
/// round within [`WINDOW_TRUST`] would take hundreds of thousands of forks a second; past that,
/// and whenever the counter cannot be read, the whole table is scanned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    last_pid: Option<libc::pid_t>,
    opened: Instant,
}

impl Window {
    /// A window opening now.
    pub(crate) fn open() -> Window {
        Window {
            last_pid: last_pid(),
            opened: Instant::now(),
        }
    }

    /// A window that bounds nothing: the whole table is scanned.
    pub(crate) fn everything() -> Window {
        Window {
            last_pid: None,
            opened: Instant::now(),
        }
    }

    /// The pids a scan must read now: `(after, up_to)` cyclically, or `None` for all.
    fn range(&self) -> Option<(libc::pid_t, libc::pid_t)> {
        if self.opened.elapsed() > WINDOW_TRUST {
            return None;
        }
        Some((self.last_pid?, last_pid()?))
    }
}

/// The last pid the kernel handed out in troupe's pid namespace.
fn last_pid() -> Option<libc::pid_t> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether `pid` lies in the cyclic range (after, up_to].
fn in_range(pid: libc::pid_t, (after, up_to): (libc::pid_t, libc::pid_t)) -> bool {
    match after <= up_to {
        true => pid > after && pid <= up_to,
        false => pid > after || pid <= up_to,
    }
}

/// One line of `/proc/<pid>/stat`, the fields that matter here.
#[derive(Debug, Clone, Copy)]
struct Stat {
    pid: libc::pid_t,
    ppid: libc::pid_t,
    pgid: libc::pid_t,
    sid: libc::pid_t,
    zombie: bool,
}

fn read_stat(pid: libc::pid_t) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session …`; comm may hold spaces and parentheses.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let mut number = || fields.next()?.parse::<libc::pid_t>().ok();
    Some(Stat {
        pid,
        ppid: number()?,
        pgid: number()?,
        sid: number()?,
        zombie: matches!(state, "Z" | "X"),
    })
}

/// The processes a sweep looks at, once troupe is the subreaper: its descendants (every process
/// a call started is one), read down the tree from troupe, a few reads per descendant whatever
/// else runs on the machine, with their call markers; one look shared by the calls ending at
/// the same time (`shared_look`). `None` before troupe is the subreaper or where the kernel
/// lists no children: then the caller scans its `window`. [`Busy`] when the caller may not
/// wait and another call's look is running.
fn shared_tree(may_wait: bool) -> Result<Option<Arc<Look<Stat>>>, Busy> {
    if !SUBREAPER.load(Ordering::Relaxed) {
        return Ok(None);
    }
    LOOKS.after_now(may_wait, || {
        let me = getpid().as_raw_pid();
        let all = own_tree()?;
        let living: Vec<libc::pid_t> = all
            .iter()
            .filter(|s| !s.zombie && s.pid != me)
            .map(|s| s.pid)
            .collect();
        Some(Look::with_marks(all, living.into_iter()))
    })
}

/// Troupe's descendants, read down the tree from its own children; `None` where the kernel
/// does not list children.
fn own_tree() -> Option<Vec<Stat>> {
    let mut out = own_children()?;
    let mut seen: std::collections::HashSet<libc::pid_t> = out.iter().map(|s| s.pid).collect();
    let mut next = 0;
    while next < out.len() {
        let parent = out[next].pid;
        next += 1;
        for pid in children_of(parent) {
            if seen.insert(pid) {
                if let Some(stat) = read_stat(pid) {
                    out.push(stat);
                }
            }
        }
    }
    // Whatever was re-parented to troupe while the tree was read (its parent died meanwhile).
    for stat in own_children().unwrap_or_default() {
        if seen.insert(stat.pid) {
            out.push(stat);
        }
    }
    Some(out)
}

/// The children of every thread of `pid` (empty when it is gone).
fn children_of(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    out
}

/// Every process in `window` (all of them when it bounds nothing), from the whole table.
fn scan(window: &Window) -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pids: Vec<libc::pid_t> = dir
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .collect();
    // Read after listing, so every listed pid was handed out by then.
    let range = window.range();
    pids.into_iter()
        .filter(|pid| range.is_none_or(|range| in_range(*pid, range)))
        .filter_map(read_stat)
        .collect()
}

/// Troupe's own children (what it started and what it adopted), from
/// `/proc/self/task/<tid>/children` (a process's children are listed under the thread that
/// started or adopted them): a few reads instead of one per process of the machine. `None`
/// where the kernel does not list children.
fn own_children() -> Option<Vec<Stat>> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut pids: Vec<libc::pid_t> = Vec::new();
    let mut listed = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        listed = true;
        pids.extend(
            text.split_ascii_whitespace()
                .filter_map(|p| p.parse::<libc::pid_t>().ok()),
        );
    }
    listed.then(|| pids.into_iter().filter_map(read_stat).collect())
}

/// The processes below `root` in the process tree (not `root` itself).
fn descendants(all: &[Stat], root: libc::pid_t) -> Vec<Stat> {
    let mut children: HashMap<libc::pid_t, Vec<&Stat>> = HashMap::new();
    for stat in all {
        children.entry(stat.ppid).or_default().push(stat);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            out.push(**child);
            stack.push(child.pid);
        }
    }
    out
}

/// Whether `pid` was started with `marker` (`NAME=value`) in its environment.
fn carries(pid: libc::pid_t, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|b| *b == 0).any(|entry| entry == marker))
}

/// SIGKILLs `pid` if it still carries `marker`, through a pidfd so a recycled pid is never hit.
fn kill_marked(pid: libc::pid_t, marker: &[u8]) {
    let Some(fd) = Pid::from_raw(pid).and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok()) else {
        return; // gone already (or no pidfds: the process table is re-read next round)
    };
    // The descriptor pins the process: if `pid` still carries the marker now, it is the one the
    // descriptor refers to (or that one has exited and the signal finds nobody).
    if carries(pid, marker) {
        let _ = pidfd_send_signal(&fd, Signal::KILL);
    }
}

/// SIGKILLs every process in group `pgid`.
pub(crate) fn kill_group(pgid: libc::pid_t) {
    if pgid <= 0 {
        // kill(0 or -1) would hit our own group or every process we may signal.
        return;
    }
    let Some(group) = Pid::from_raw(pgid) else {
        return;
    };
    if let Err(error) = kill_process_group(group, Signal::KILL) {
        // ESRCH: the group is already empty, which is the usual case after a clean exit.
        tracing::trace!(pgid, %error, "kill process group");
    }
}

/// The session and group troupe itself is in, as `/proc` shows them (the same view the children's
/// stats come from). Read from `/proc` rather than asked with getsid/getpgrp: in a pid namespace
/// whose session leader lives outside it (a container's test runner) both are 0, which rustix's
/// `Pid` cannot hold. `None` when `/proc` cannot say: then nothing counts as adopted.
fn own_session() -> Option<(libc::pid_t, libc::pid_t)> {
    let me = read_stat(getpid().as_raw_pid())?;
    Some((me.sid, me.pgid))
}

/// Whether a child of troupe was adopted (see the module comment) rather than spawned by troupe.
fn adopted(stat: &Stat, session: Option<(libc::pid_t, libc::pid_t)>) -> bool {
    let Some((sid, pgrp)) = session else {
        return false;
    };
    stat.sid != sid || (stat.pgid != stat.pid && stat.pgid != pgrp)
}

/// Reaps every adopted zombie child of troupe; returns how many it reaped.
fn reap_adopted(all: &[Stat], me: libc::pid_t) -> usize {
    let session = own_session();
    let candidates: Vec<libc::pid_t> = all
        .iter()
        .filter(|s| s.ppid == me && s.zombie && adopted(s, session))
        .map(|s| s.pid)
        .collect();
    if candidates.is_empty() {
        return 0;
    }
    let Ok(_reaping) = REAP.lock() else {
        return 0;
    };
    let mut reaped = 0;
    for pid in candidates {
        // Re-read under the lock: only we reap adopted children, so a zombie seen here is still
        // ours when waitpid runs.
        if read_stat(pid).is_some_and(|s| s.ppid == me && s.zombie && adopted(&s, session)) {
            let waited = Pid::from_raw(pid).map(|p| waitpid(Some(p), WaitOptions::NOHANG));
            if matches!(waited, Some(Ok(Some(_)))) {
                reaped += 1;
            }
        }
    }
    reaped
}

/// One round of ending a call: kills its group and every process carrying `marker`, reaps what
/// troupe adopted, and returns how many of its processes were still alive (dying, or signalled
/// just now). `may_wait`: whether it may wait for a look at the tree another call is taking
/// (not on a runtime's worker); one that may not counts as alive when it would have to.
pub(crate) fn end_call_once(
    marker: &[u8],
    pgid: Option<libc::pid_t>,
    window: &Window,
    may_wait: bool,
) -> usize {
    let me = getpid().as_raw_pid();
    if let Some(pgid) = pgid {
        kill_group(pgid);
    }
    if childless() {
        return 0;
    }
    let Ok(look) = shared_tree(may_wait) else {
        // Another call's look is running, begun too early for this one: the caller finishes
        // off the worker, where it may wait for the next.
        return 1;
    };
    let scanned;
    let all: &[Stat] = match &look {
        Some(look) => &look.all,
        None => {
            scanned = scan(window);
            &scanned
        }
    };
    let subreaper = SUBREAPER.load(Ordering::Relaxed);
    let searched = match subreaper {
        true => descendants(all, me),
        false => all.to_vec(),
    };
    let mut alive = 0;
    for stat in searched.iter().filter(|s| !s.zombie && s.pid != me) {
        // What the shared look read of its environment, else (not read, or not readable then)
        // a read now.
        let carried = || {
            look.as_ref()
                .and_then(|look| look.marks.get(&stat.pid)?.carries(marker))
                .unwrap_or_else(|| carries(stat.pid, marker))
        };
        if Some(stat.pgid) == pgid {
            alive += 1; // killed above; waiting for it to die
        } else if carried() {
            kill_marked(stat.pid, marker);
            alive += 1;
        } else if subreaper && environ_unknown(stat.pid) {
            // A descendant between fork and exec shows no environment yet: look again.
            alive += 1;
        }
    }
    alive += orphaned_next(&searched, me);
    // A reaped process's own zombie children (a daemon killed with the shell that started it)
    // come to troupe as it is reaped: one more round finds them.
    if reap_adopted(all, me) > 0 {
        alive += 1;
    }
    alive
}

/// Whether troupe, the child subreaper, has no child at all, living or a zombie (asked of the
/// kernel without reaping anything). Then nothing any call started is left: whatever a call
/// starts stays in troupe's process tree, whose every process descends from one of troupe's
/// children. So the usual call, whose one process troupe has reaped, ends without a look at
/// `/proc`.
fn childless() -> bool {
    SUBREAPER.load(Ordering::Relaxed)
        && matches!(
            waitid(
                WaitId::All,
                WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT | WaitIdOptions::EXITED
            ),
            Err(Errno::CHILD)
        )
}

/// Whether `pid`'s environment cannot be told yet: it reads empty or not at all (a process in
/// the middle of exec) though the process is still there.
fn environ_unknown(pid: libc::pid_t) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .is_none_or(|environ| environ.is_empty())
        && read_stat(pid).is_some_and(|s| !s.zombie)
}

/// Zombies whose parent is a zombie child of troupe: reaping that parent (this round) hands
/// them to troupe (a subreaper), so one more round must reap them — else a daemon killed just
/// before the shell that started it would be left a zombie.
fn orphaned_next(searched: &[Stat], me: libc::pid_t) -> usize {
    if !SUBREAPER.load(Ordering::Relaxed) {
        return 0; // orphans go to init, which reaps them
    }
    let zombie_children: std::collections::HashSet<libc::pid_t> = searched
        .iter()
        .filter(|s| s.zombie && s.ppid == me)
        .map(|s| s.pid)
        .collect();
    searched
        .iter()
        .filter(|s| s.zombie && zombie_children.contains(&s.ppid))
        .count()
}

/// Kills what one call left: round after round (each death can re-parent more to troupe) until
/// none of its processes is alive.
pub(crate) fn end_call(marker: &[u8], pgid: Option<libc::pid_t>, window: &Window) {
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    // A call that left something behind is over only after two clean rounds in a row: a
    // process killed in one round can be re-parented to troupe (and become its zombie) while
    // the next one reads the tree.
    let mut clean = 0;
    loop {
        let alive = end_call_once(marker, pgid, window, true);
        if alive == 0 {
            clean += 1;
            if clean == 2 {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        clean = 0;
        if started.elapsed() > END_DEADLINE {
            tracing::warn!(alive, "processes of a tool call would not die");
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Kills and reaps every adopted child of troupe (processes that left their call's group and
/// environment behind); for when troupe ends and no call may leave anything running.
pub(crate) fn end_adopted() {
    let me = getpid().as_raw_pid();
    let session = own_session();
    let started = Instant::now();
    let window = SINCE_START
        .get()
        .copied()
        .unwrap_or_else(Window::everything);
    loop {
        if childless() {
            return;
        }
        // Only troupe's own children can be adopted ones: read those alone where the kernel
        // lists them (at exit the pid window is too old to bound the table).
        let all = match SUBREAPER.load(Ordering::Relaxed) {
            true => own_children().unwrap_or_else(|| scan(&window)),
            false => scan(&window),
        };
        let mut alive = 0;
        for stat in all
            .iter()
            .filter(|s| s.ppid == me && !s.zombie && adopted(s, session))
        {
            // Our child: the pid cannot be recycled before we reap it.
            if let Some(pid) = Pid::from_raw(stat.pid) {
                let _ = kill_process(pid, Signal::KILL);
            }
            alive += 1;
        }
        if reap_adopted(&all, me) > 0 {
            alive += 1; // what the reaped ones leave comes to troupe: look once more
        }
        if alive == 0 || started.elapsed() > END_DEADLINE {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
