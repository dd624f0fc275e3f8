//! What the protocols keep in memory in one process: the stop flags of the agents running
//! here, wake-ups for tool calls waiting on a permission answer, who answers permission
//! questions for the lead, and which requests were already re-announced. The durable truth
//! is always the request store; this only makes waiting fast.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use troupe_agent::Approver;

/// Per-process protocol bookkeeping, owned by the team runtime.
#[derive(Default)]
pub struct ProtocolState {
    agents: Mutex<HashMap<String, (u64, Arc<AtomicBool>)>>,
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    user: Mutex<Option<Arc<dyn Approver>>>,
    reminded: Mutex<HashSet<String>>,
}

impl ProtocolState {
    /// Remembers the stop flag of a teammate's agent running in this process.
    pub fn register_agent(&self, name: &str, epoch: u64, stop: Arc<AtomicBool>) {
        if let Ok(mut agents) = self.agents.lock() {
            agents.insert(name.to_string(), (epoch, stop));
        }
    }

    /// Sets the stop flag of that incarnation if it runs here; true when it did.
    pub fn stop_agent(&self, name: &str, epoch: u64) -> bool {
        let Ok(agents) = self.agents.lock() else {
            return false;
        };
        match agents.get(name) {
            Some((e, flag)) if *e == epoch => {
                flag.store(true, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    /// The wake-up a waiter for request `id` awaits (created on first use).
    pub fn waiter(&self, id: &str) -> Arc<Notify> {
        match self.waiters.lock() {
            Ok(mut w) => w.entry(id.to_string()).or_default().clone(),
            // A poisoned map only loses the fast path; the waiter still re-checks the store.
            Err(_) => Arc::new(Notify::new()),
        }
    }

    /// Forgets the wake-up of request `id` once its waiter is done.
    pub fn forget_waiter(&self, id: &str) {
        if let Ok(mut w) = self.waiters.lock() {
            w.remove(id);
        }
    }

    /// Wakes whoever in this process waits on request `id` (a stored permit covers a waiter
    /// that has not started waiting yet).
    pub fn resolved(&self, id: &str) {
        let notify = self.waiters.lock().ok().and_then(|w| w.get(id).cloned());
        if let Some(n) = notify {
            n.notify_one();
        }
    }

    /// Makes `approver` (the person at the REPL) answer teammates' permission questions
    /// instead of the lead model (`teammate_permissions: "user"`).
    pub fn answer_with(&self, approver: Arc<dyn Approver>) {
        if let Ok(mut user) = self.user.lock() {
            *user = Some(approver);
        }
    }

    /// The person's approver, when permission questions go to the person.
    pub fn user_answerer(&self) -> Option<Arc<dyn Approver>> {
        self.user.lock().ok().and_then(|u| u.clone())
    }

    /// True the first time it is called for `id` (reminders are sent once per request).
    pub fn first_reminder(&self, id: &str) -> bool {
        self.reminded
            .lock()
            .map(|mut r| r.insert(id.to_string()))
            .unwrap_or(false)
    }
}
