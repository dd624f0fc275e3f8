//! Leases: an agent is alive while a live process holds its lease. [`Lease`] is the
//! backend-neutral handle (a backend keeps what it needs in a boxed [`LeaseGuard`]); the file
//! backend's lease (`file::lease`: a lock on the member's byte of the team's member table) is
//! re-exported here, since the processes of a team on either backend probe and take it by the
//! team's folder. The kernel drops a lock when the process ends, however it ends, so a crashed
//! agent never blocks its successor, and no pid is ever probed (`kill(pid, 0)` is fooled by
//! zombies and reused pids); the holder records who it is, so whoever is refused can be told.

use std::process::Command;
use troupe_protocol::now_ms;

use serde::{Deserialize, Serialize};

pub use crate::file::lease::{acquire_lease, adopt_lease, members_path, probe_lease};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StoreError;

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
}
