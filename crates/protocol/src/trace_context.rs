//! The W3C trace context (`traceparent`) each agent of the process works under, for what
//! crosses to another agent: the mail an agent sends carries its current context, and the
//! turn that mail wakes continues that trace. Set and read by telemetry; empty (and never
//! touched) while it is off.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

#[derive(Default)]
struct Contexts {
    /// The context of each agent's turn under way.
    current: HashMap<String, String>,
    /// The context the last mail delivered to an agent carried, until its next turn takes it.
    incoming: HashMap<String, String>,
    /// The context a teammate was spawned under, until its first turn takes it.
    spawned: HashMap<String, String>,
}

static CONTEXTS: Mutex<Option<Contexts>> = Mutex::new(None);

/// Whether anything was ever recorded: until then (telemetry off) a read is one atomic load,
/// not a lock, on the mail path.
static USED: AtomicBool = AtomicBool::new(false);

/// Records something.
fn with<T>(f: impl FnOnce(&mut Contexts) -> T) -> Option<T> {
    USED.store(true, Ordering::Relaxed);
    let mut guard = CONTEXTS.lock().ok()?;
    Some(f(guard.get_or_insert_with(Contexts::default)))
}

/// Reads (and may take) something recorded, if anything ever was.
fn read<T>(f: impl FnOnce(&mut Contexts) -> Option<T>) -> Option<T> {
    if !USED.load(Ordering::Relaxed) {
        return None;
    }
    f(CONTEXTS.lock().ok()?.as_mut()?)
}

/// Sets (or, with `None`, clears) the context `agent`'s turn runs under.
pub fn set_current(agent: &str, traceparent: Option<String>) {
    match traceparent {
        Some(tp) => {
            with(|c| c.current.insert(agent.to_string(), tp));
        }
        None => {
            read(|c| c.current.remove(agent));
        }
    }
}

/// The context `agent`'s turn runs under, if telemetry traces it.
pub fn current(agent: &str) -> Option<String> {
    read(|c| c.current.get(agent).cloned())
}

/// Remembers the context mail delivered to `agent` carried.
pub fn deliver(agent: &str, traceparent: &str) {
    with(|c| {
        c.incoming
            .insert(agent.to_string(), traceparent.to_string())
    });
}

/// The context the mail delivered to `agent` since its last turn carried (the latest one).
pub fn take_incoming(agent: &str) -> Option<String> {
    read(|c| c.incoming.remove(agent))
}

/// Remembers the context `agent` was spawned under, for its first turn.
pub fn spawn(agent: &str, traceparent: &str) {
    with(|c| c.spawned.insert(agent.to_string(), traceparent.to_string()));
}

/// The context `agent` was spawned under, once.
pub fn take_spawned(agent: &str) -> Option<String> {
    read(|c| c.spawned.remove(agent))
}
