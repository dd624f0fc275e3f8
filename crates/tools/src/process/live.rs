//! The tool calls running right now, so a signal to troupe can end their processes.

use super::sweep;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The environment variable that marks every process of one call.
pub const CALL_MARKER_ENV: &str = "TROUPE_TOOL_CALL";

/// What identifies one call's processes.
#[derive(Debug, Clone)]
struct Trace {
    /// `TROUPE_TOOL_CALL=<id>`, as it appears in `/proc/<pid>/environ`.
    marker: Vec<u8>,
    /// The shell's process group, once it is spawned.
    pgid: Option<libc::pid_t>,
    /// The pids the call's processes can have.
    window: sweep::Window,
}

static LIVE: Mutex<Vec<Trace>> = Mutex::new(Vec::new());

/// Set by [`end_all`]: troupe is exiting, and no new call may start (it would escape the sweep).
static ENDING: AtomicBool = AtomicBool::new(false);

/// Why a call may not start.
#[derive(Debug, thiserror::Error)]
#[error("troupe is exiting; no new command may start")]
pub struct Exiting;

/// One running call, registered until it is ended.
#[derive(Debug)]
pub struct LiveCall {
    id: String,
    trace: Trace,
}

impl LiveCall {
    /// Registers a new call with a fresh marker; give its processes [`LiveCall::env`]. Refused
    /// once troupe is exiting.
    pub fn start() -> Result<LiveCall, Exiting> {
        let id = troupe_protocol::ids::new_ulid().to_string();
        let trace = Trace {
            marker: format!("{CALL_MARKER_ENV}={id}").into_bytes(),
            pgid: None,
            window: sweep::Window::open(),
        };
        let mut live = LIVE.lock().map_err(|_| Exiting)?;
        // Checked under the lock end_all takes its snapshot under: a call is either in the
        // snapshot or refused.
        if ENDING.load(Ordering::SeqCst) {
            return Err(Exiting);
        }
        live.push(trace.clone());
        Ok(LiveCall { id, trace })
    }

    /// The marker variable to export to the call's processes.
    pub fn env(&self) -> (&'static str, &str) {
        (CALL_MARKER_ENV, &self.id)
    }

    /// Records the process group the call's shell leads.
    pub fn set_group(&mut self, pgid: libc::pid_t) {
        self.trace.pgid = Some(pgid);
        if let Ok(mut live) = LIVE.lock() {
            if let Some(entry) = live.iter_mut().find(|t| t.marker == self.trace.marker) {
                entry.pgid = Some(pgid);
            }
        }
    }

    /// Kills the call's group now (cheap; no waiting).
    pub fn kill_group(&self) {
        if let Some(pgid) = self.trace.pgid {
            sweep::kill_group(pgid);
        }
    }

    /// Kills the call's group and unregisters the call without sweeping for its other
    /// processes: for troupe's own exit, where [`end_all`] then ends whatever was orphaned in
    /// one sweep for every call. Wait until the group's leader is gone before `end_all`, so its
    /// orphans have been handed to troupe (the subreaper) by then.
    pub fn kill_group_and_forget(self) {
        self.kill_group();
        self.unregister();
    }

    /// One round of [`LiveCall::end`] that never waits: the call is over (and unregistered) when
    /// nothing of it is left alive, else it is handed back to be ended with `end`. The usual
    /// command leaves nothing behind, and this spares it a trip to a blocking thread.
    pub fn end_without_waiting(self) -> Option<LiveCall> {
        // On a worker: it does not wait for another call's look at the tree (then `end` does).
        let alive = sweep::end_call_once(
            &self.trace.marker,
            self.trace.pgid,
            &self.trace.window,
            false,
        );
        if alive > 0 {
            return Some(self);
        }
        self.unregister();
        None
    }

    /// Kills every process of the call, waits until they are gone, reaps what troupe adopted,
    /// and unregisters the call. Blocks (briefly, unless a process is stuck in the kernel).
    pub fn end(self) {
        sweep::end_call(&self.trace.marker, self.trace.pgid, &self.trace.window);
        self.unregister();
    }

    fn unregister(&self) {
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|t| t.marker != self.trace.marker);
        }
    }
}

/// Ends every running call's processes and every process troupe adopted, and refuses new calls
/// from then on; for when troupe exits (a signal, or the end of the run). Blocks until they are
/// gone.
pub fn end_all() {
    let calls = match LIVE.lock() {
        Ok(live) => {
            ENDING.store(true, Ordering::SeqCst);
            live.clone()
        }
        Err(_) => Vec::new(),
    };
    for trace in &calls {
        if let Some(pgid) = trace.pgid {
            sweep::kill_group(pgid);
        }
    }
    for trace in &calls {
        sweep::end_call(&trace.marker, trace.pgid, &sweep::Window::everything());
    }
    sweep::end_adopted();
    crate::sandbox::wait_retired(std::time::Duration::from_secs(5));
}
