//! The tool calls running right now, so a signal to troupe can end their processes.

use super::sweep;
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
}

static LIVE: Mutex<Vec<Trace>> = Mutex::new(Vec::new());

/// One running call, registered until it is ended.
#[derive(Debug)]
pub struct LiveCall {
    id: String,
    trace: Trace,
}

impl LiveCall {
    /// Registers a new call with a fresh marker; give its processes [`LiveCall::env`].
    pub fn start() -> LiveCall {
        let id = ulid::Ulid::new().to_string();
        let trace = Trace {
            marker: format!("{CALL_MARKER_ENV}={id}").into_bytes(),
            pgid: None,
        };
        if let Ok(mut live) = LIVE.lock() {
            live.push(trace.clone());
        }
        LiveCall { id, trace }
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

    /// Kills every process of the call, waits until they are gone, reaps what troupe adopted,
    /// and unregisters the call. Blocks (briefly, unless a process is stuck in the kernel).
    pub fn end(self) {
        sweep::end_call(&self.trace.marker, self.trace.pgid);
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|t| t.marker != self.trace.marker);
        }
    }
}

/// Ends every running call's processes and every process troupe adopted; for when troupe exits
/// (a signal, or the end of the run). Blocks until they are gone.
pub fn end_all() {
    let calls = LIVE.lock().map(|live| live.clone()).unwrap_or_default();
    for trace in &calls {
        if let Some(pgid) = trace.pgid {
            sweep::kill_group(pgid);
        }
    }
    for trace in &calls {
        sweep::end_call(&trace.marker, trace.pgid);
    }
    sweep::end_adopted();
}
