//! Leases: a key per agent in the team's `live` bucket, whose entries lapse after the lease TTL
//! (the bucket's max age) unless refreshed. The holder's heartbeat rewrites the key every third
//! of the TTL, compare-and-set on the revision it last wrote, so a holder that lost its key
//! (its host vanished, then came back) finds out instead of overwriting the new holder. A
//! process that dies, however it dies, stops refreshing: its lease lapses after the TTL.
//!
//! Handing a lease to a child process: the record carries a random token; the child is given
//! the token and takes the key over by compare-and-set while the record still carries it. The
//! parent keeps refreshing (naming the child as holder) until the child has taken over, or for
//! a grace period should the child never get that far.

use std::process::Command;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::UpdateErrorKind;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use troupe_store::{Lease, LeaseGuard, LeaseHolder, LeaseState, LivenessStore, StoreError};

use crate::kv::Cas;
use crate::{check_agent, to_bytes, NatsStore};

/// How long letting a lease go waits for the server to delete its key.
const RELEASE_WAIT: Duration = Duration::from_secs(3);

/// How long a parent keeps a handed-over lease alive for a child that has not taken it over.
const HANDOVER_GRACE: Duration = Duration::from_secs(60);

/// What the lease key holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LeaseRecord {
    holder: LeaseHolder,
    /// Identifies this holding (and is the handoff a child is given).
    token: String,
    /// Counts the holders that took the lease over from a holder found gone: the old holder's
    /// heartbeat, which writes only on the revision it last wrote, is fenced out by the
    /// takeover's write, and the epoch says so to whoever reads the key.
    #[serde(default)]
    epoch: u64,
}

/// A lease key as read: its record (`None` when unreadable), revision, and age.
struct Current {
    record: Option<LeaseRecord>,
    revision: u64,
    age: Option<Duration>,
}

/// What the heartbeat is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Held,
    HandedOver(u32),
    Release,
}

/// This process's hold on a lease: the heartbeat task's controls.
#[derive(Debug)]
struct NatsLease {
    store: NatsStore,
    token: String,
    control: watch::Sender<Mode>,
    stopped: Option<oneshot::Receiver<()>>,
    handed_over: bool,
}

impl LeaseGuard for NatsLease {
    fn release(mut self: Box<Self>) -> troupe_store::Releasing {
        let _ = self.control.send(Mode::Release);
        let stopped = self.stopped.take();
        Box::pin(async move {
            if let Some(stopped) = stopped {
                // The heartbeat deletes the key and says so.
                let _ = tokio::time::timeout(RELEASE_WAIT, stopped).await;
            }
        })
    }

    fn pass_to_child(&self, _cmd: &mut Command) -> String {
        self.token.clone()
    }

    fn hand_over(mut self: Box<Self>, child_pid: u32) {
        self.handed_over = true;
        let _ = self.control.send(Mode::HandedOver(child_pid));
    }
}

impl Drop for NatsLease {
    fn drop(&mut self) {
        if self.handed_over {
            return; // the heartbeat goes on until the child has it
        }
        let _ = self.control.send(Mode::Release);
        if let Some(stopped) = self.stopped.take() {
            // Outside any runtime (the process is ending), wait briefly for the key to be
            // deleted, so "not alive" is true on return. Inside one the deletion goes on in
            // the background: a caller that needs it done awaits `Lease::release` instead.
            let _ = self.store.inner.conn.block(
                async move {
                    let _ = tokio::time::timeout(RELEASE_WAIT, stopped).await;
                },
                RELEASE_WAIT,
            );
        }
    }
}

impl NatsStore {
    fn lease_place(&self, agent: &str) -> String {
        let inner = &self.inner;
        format!(
            "{} on {} (it lapses {}s after its holder stops refreshing it)",
            inner.live.place(agent),
            inner.conn.server,
            inner.lease_ttl.as_secs_f64()
        )
    }

    async fn read_lease(&self, agent: &str) -> Result<Option<Current>, StoreError> {
        let inner = &self.inner;
        Ok(inner
            .live
            .get(inner.conn.link(), agent)
            .await?
            .map(|r| Current {
                record: serde_json::from_slice(&r.value).ok(),
                revision: r.revision,
                age: r.age,
            }))
    }

    /// Takes over the lease at `current` from a holder on this host whose process is gone
    /// (checked against `/proc`), fencing its epoch; `None` when someone wrote the key first.
    async fn take_over(
        &self,
        agent: &str,
        current: &Current,
        old: &LeaseRecord,
    ) -> Result<Option<Lease>, StoreError> {
        let inner = &self.inner;
        let record = LeaseRecord {
            holder: LeaseHolder::this_process(),
            token: troupe_protocol::ids::new_ulid().to_string(),
            epoch: old.epoch + 1,
        };
        let bytes = to_bytes("lease", &record)?;
        match inner
            .live
            .update(inner.conn.link(), agent, bytes, current.revision)
            .await?
        {
            Cas::Done(revision) => {
                tracing::info!(agent, old = %old.holder, epoch = record.epoch, "the lease's holder is gone from this host; taken over at once");
                Ok(Some(self.hold(agent, record, revision)))
            }
            Cas::Conflict => Ok(None),
        }
    }

    /// Starts refreshing `agent`'s key from `revision`; returns the guard.
    fn hold(&self, agent: &str, record: LeaseRecord, revision: u64) -> Lease {
        let (control, rx) = watch::channel(Mode::Held);
        let (done, stopped) = oneshot::channel();
        let beat = Heartbeat {
            kv: self.inner.live.kv.clone(),
            key: agent.to_string(),
            record: record.clone(),
            revision,
            every: self.inner.lease_ttl / 3,
        };
        self.inner.conn.handle().spawn(async move {
            beat.run(rx).await;
            let _ = done.send(());
        });
        let guard = NatsLease {
            store: self.clone(),
            token: record.token,
            control,
            stopped: Some(stopped),
            handed_over: false,
        };
        Lease::new(
            agent,
            self.lease_place(agent),
            record.holder,
            Box::new(guard),
        )
    }
}

#[async_trait::async_trait]
impl LivenessStore for NatsStore {
    async fn acquire_lease(&self, agent: &str) -> Result<Lease, StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        let record = LeaseRecord {
            holder: LeaseHolder::this_process(),
            token: troupe_protocol::ids::new_ulid().to_string(),
            epoch: 0,
        };
        let bytes = to_bytes("lease", &record)?;
        // A key that lapses or is taken over between the refused create and the read is tried
        // again.
        for _ in 0..3 {
            if let Cas::Done(revision) = inner
                .live
                .create(inner.conn.link(), agent, bytes.clone())
                .await?
            {
                return Ok(self.hold(agent, record, revision));
            }
            let Some(current) = self.read_lease(agent).await? else {
                continue;
            };
            if let Some(old) = current.record.as_ref().filter(|r| r.holder.is_gone()) {
                match self.take_over(agent, &current, old).await? {
                    Some(lease) => return Ok(lease),
                    None => continue,
                }
            }
            return Err(StoreError::LeaseHeld {
                agent: agent.to_string(),
                team: inner.team.clone(),
                place: self.lease_place(agent),
                holder: current.record.map(|r| Box::new(r.holder)),
            });
        }
        Err(inner.conn.error(
            format!("take the lease of {agent}"),
            "it kept changing hands",
        ))
    }

    async fn adopt_lease(&self, agent: &str, handoff: &str) -> Result<Lease, StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        let refuse = |reason: String| StoreError::LeaseNotInherited {
            agent: agent.to_string(),
            handoff: handoff.to_string(),
            reason,
        };
        // The parent's heartbeat may write between our read and our write: read again.
        for _ in 0..100 {
            let Some(Current {
                record: current,
                revision,
                ..
            }) = self.read_lease(agent).await?
            else {
                return Err(refuse(format!(
                    "the lease is not held any more (it lapsed before this process took it over; {})",
                    self.lease_place(agent)
                )));
            };
            let Some(current) = current else {
                return Err(refuse("the lease record is unreadable".into()));
            };
            if current.token != handoff {
                return Err(refuse(format!("it is held by {} now", current.holder)));
            }
            let record = LeaseRecord {
                holder: LeaseHolder::this_process(),
                token: troupe_protocol::ids::new_ulid().to_string(),
                epoch: current.epoch,
            };
            let bytes = to_bytes("lease", &record)?;
            if let Cas::Done(rev) = inner
                .live
                .update(inner.conn.link(), agent, bytes, revision)
                .await?
            {
                return Ok(self.hold(agent, record, rev));
            }
        }
        Err(refuse("it kept changing while being taken over".into()))
    }

    async fn probe_lease(&self, agent: &str) -> Result<LeaseState, StoreError> {
        check_agent(agent)?;
        Ok(match self.read_lease(agent).await? {
            None => LeaseState::Free,
            // A holder on this host whose process is gone holds nothing, however fresh its key.
            Some(current) if current.record.as_ref().is_some_and(|r| r.holder.is_gone()) => {
                LeaseState::Free
            }
            Some(current) => LeaseState::Held(current.record.map(|r| r.holder)),
        })
    }

    async fn lease_lapses_in(&self, agent: &str) -> Result<Option<Duration>, StoreError> {
        check_agent(agent)?;
        Ok(self.read_lease(agent).await?.map(|current| {
            let age = current.age.unwrap_or_default();
            self.inner.lease_ttl.saturating_sub(age)
        }))
    }
}

/// The refreshing of one held lease.
struct Heartbeat {
    kv: async_nats::jetstream::kv::Store,
    key: String,
    record: LeaseRecord,
    revision: u64,
    every: Duration,
}

impl Heartbeat {
    async fn run(mut self, mut control: watch::Receiver<Mode>) {
        let mut handed_at: Option<Instant> = None;
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.every) => {}
                changed = control.changed() => {
                    if changed.is_err() {
                        return; // the guard is gone without a word: nothing to keep
                    }
                }
            }
            let mode = *control.borrow_and_update();
            match mode {
                Mode::Release => {
                    if let Err(e) = self
                        .kv
                        .delete_expect_revision(&self.key, Some(self.revision))
                        .await
                    {
                        tracing::debug!(key = %self.key, error = %e, "lease not deleted; it lapses on its own");
                    }
                    return;
                }
                Mode::HandedOver(pid) if handed_at.is_none() => {
                    handed_at = Some(Instant::now());
                    self.record.holder = LeaseHolder::for_pid(pid);
                }
                Mode::HandedOver(_) | Mode::Held => {}
            }
            if handed_at.is_some_and(|at| at.elapsed() > HANDOVER_GRACE) {
                return; // the child never took it: let it lapse
            }
            if !self.refresh(handed_at.is_some()).await {
                return;
            }
        }
    }

    /// One refresh; false when the lease is no longer this holder's to refresh.
    async fn refresh(&mut self, handed_over: bool) -> bool {
        let Ok(bytes) = serde_json::to_vec(&self.record) else {
            return false;
        };
        match self
            .kv
            .update(&self.key, bytes.clone().into(), self.revision)
            .await
        {
            Ok(rev) => {
                self.revision = rev;
                true
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                match crate::kv::entry(&self.kv, &self.key).await {
                    Ok(Some(entry)) => {
                        let ours = serde_json::from_slice::<LeaseRecord>(&entry.value)
                            .is_ok_and(|r| r.token == self.record.token);
                        if ours {
                            // Our own write whose answer was lost.
                            self.revision = entry.revision;
                            return true;
                        }
                        if !handed_over {
                            tracing::warn!(key = %self.key, "the lease was taken by another process while this one could not refresh it");
                        }
                        false
                    }
                    Ok(_) if !handed_over => {
                        // It lapsed while the server was out of reach: take it again, if free.
                        match self.kv.create(&self.key, bytes.into()).await {
                            Ok(rev) => {
                                tracing::warn!(key = %self.key, "the lease lapsed while the server was unreachable; taken again");
                                self.revision = rev;
                                true
                            }
                            Err(e) => {
                                tracing::warn!(key = %self.key, error = %e, "the lease lapsed and another process holds it now");
                                false
                            }
                        }
                    }
                    Ok(_) => false,
                    Err(_) => true, // unreachable right now: try again next beat
                }
            }
            Err(e) => {
                tracing::debug!(key = %self.key, error = %e, "lease refresh failed; retrying next beat");
                true
            }
        }
    }
}
