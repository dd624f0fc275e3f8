//! The async store traits on the file backend: each call that writes, waits for a lock or reads
//! a record that grows without bound (a transcript, the event log) runs its synchronous
//! operation (`sync`) on tokio's blocking pool, so no lock wait or fsync holds a runtime
//! thread; the other reads (a roster, a mailbox, a request, a task, presence, a lease's probe)
//! take no lock and run on the caller's task (decision 0034).
//! A caller's closure (an update) cannot go to the blocking pool with it — it borrows from
//! the caller — so the operation asks for it: the blocking thread sends what the closure is
//! to see back to the caller's task, which applies the closure there and answers.
//!
//! Roster writers of one store instance take their turn on an async lock before they go to
//! the blocking pool: the writer holding the roster lock waits for its caller's task to apply
//! the closure, and a thousand teammates' writers queued on the blocking pool would take every
//! thread of it, leaving none for the store calls the runtime's workers wait on.

use std::collections::BTreeMap;

use async_trait::async_trait;
use troupe_protocol::{
    AgentUsage, BlockerStatus, Envelope, Event, Member, Request, Roster, Task, TaskError, TaskId,
};

use super::roster_join::Joined;
use super::sync::{
    SyncEvents, SyncMailbox, SyncPresence, SyncRequests, SyncRoster, SyncTasks, SyncTranscripts,
};
use super::FileStore;
use crate::error::StoreError;
use crate::tasks::{NewTask, TaskFilter, TaskList, TaskUpdate};
use crate::{
    AckToken, Batch, EventCursor, EventPage, RequestFilter, TranscriptBytes, TranscriptRead, Watch,
};

/// Runs `work` on tokio's blocking pool and awaits it; a panic in `work` is resumed here.
pub(crate) async fn on_blocking_pool<R, F>(work: F) -> R
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    joined(tokio::task::spawn_blocking(work).await).await
}

/// The outcome of a blocking task, its panic resumed here.
async fn joined<R>(outcome: Result<R, tokio::task::JoinError>) -> R {
    match outcome {
        Ok(r) => r,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled only while the runtime shuts down, when nobody polls this any more:
            // never resolving is the honest answer.
            Err(_) => std::future::pending().await,
        },
    }
}

/// What the blocking thread raises to stop an operation whose caller went away before its
/// closure was applied: nothing is written, and the locks are released as it unwinds.
struct Abandoned;

/// Runs `work` on the blocking pool like [`on_blocking_pool`]; each time it calls the `ask`
/// it is given, `apply` runs on this task with what it sent, and the answer goes back.
async fn applying<I, O, R, W>(work: W, mut apply: impl FnMut(I) -> O) -> R
where
    I: Send + 'static,
    O: Send + 'static,
    R: Send + 'static,
    W: FnOnce(&mut dyn FnMut(I) -> O) -> R + Send + 'static,
{
    type Ask<I, O> = (I, tokio::sync::oneshot::Sender<O>);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Ask<I, O>>();
    let mut handle = tokio::task::spawn_blocking(move || {
        let mut ask = |input: I| -> O {
            let (reply, answer) = tokio::sync::oneshot::channel();
            if tx.send((input, reply)).is_err() {
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            answer
                .blocking_recv()
                .unwrap_or_else(|_| std::panic::resume_unwind(Box::new(Abandoned)))
        };
        work(&mut ask)
    });
    loop {
        tokio::select! {
            biased;
            Some((input, reply)) = rx.recv() => {
                let _ = reply.send(apply(input));
            }
            done = &mut handle => return joined(done).await,
        }
    }
}

/// Whether a roster write may run right here, inside `block_in_place`: on a multi-threaded
/// runtime (the worker's other tasks move to another thread meanwhile). The writer holds the
/// store's roster turn, so one thread at most is taken this way, and the caller's closure is
/// applied on the spot: the blocking pool's way cost three hand-offs between threads per
/// write (there, the closure back to the caller's task and its answer back), and a
/// thousand teammates' roster writes queue behind one another for their turn.
fn on_worker_in_place() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

impl FileStore {
    /// Runs `op` on the caller's task: a read that takes no lock and opens a few small files,
    /// or a presence write (a few bytes written in place, no lock, no sync), costs less than
    /// the blocking pool's two thread hand-offs (decision 0034).
    async fn here<R>(&self, op: impl FnOnce(&FileStore) -> R) -> R {
        op(self)
    }

    /// Syncs a roster write's log on the blocking pool, when the write left one to sync (a
    /// roster with no members yet is not synced: nothing goes to the pool then).
    async fn sync_roster_off(&self, written: Option<std::fs::File>) -> Result<(), StoreError> {
        match written {
            Some(file) => self.off(move |s| s.sync_roster(Some(file))).await,
            None => Ok(()),
        }
    }

    /// Runs `op` right here inside `block_in_place` on a multi-threaded runtime (see
    /// [`on_worker_in_place`]), else on a clone of this store on the blocking pool: for work
    /// that may wait on a lock briefly held by another process, such as taking a lease.
    async fn in_place<R, F>(&self, op: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&FileStore) -> R + Send + 'static,
    {
        if on_worker_in_place() {
            tokio::task::block_in_place(|| op(self))
        } else {
            self.off(op).await
        }
    }

    /// Runs `op` on a clone of this store on the blocking pool.
    async fn off<R, F>(&self, op: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&FileStore) -> R + Send + 'static,
    {
        let store = self.clone();
        on_blocking_pool(move || op(&store)).await
    }
}

#[async_trait]
impl crate::RosterStore for FileStore {
    async fn roster(&self) -> Result<Roster, StoreError> {
        self.here(SyncRoster::roster).await
    }

    async fn update_roster(&self, f: crate::RosterUpdate<'_>) -> Result<Roster, StoreError> {
        let turn = self.inner.roster_writers.lock().await;
        let (roster, written) = if on_worker_in_place() {
            tokio::task::block_in_place(|| self.write_roster(&mut |r: &mut Roster| f(r)))?
        } else {
            let store = self.clone();
            applying(
                move |ask| store.write_roster(&mut |r: &mut Roster| *r = ask(std::mem::take(r))),
                |mut r: Roster| {
                    f(&mut r);
                    r
                },
            )
            .await?
        };
        // The next writer goes on while this one waits for its sync, and joins it.
        drop(turn);
        self.sync_roster_off(written).await?;
        Ok(roster)
    }

    async fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        self.here(|s| SyncRoster::member(s, name)).await
    }

    async fn update_member(
        &self,
        name: &str,
        f: crate::MemberUpdate<'_>,
    ) -> Result<Option<Member>, StoreError> {
        let turn = self.inner.roster_writers.lock().await;
        let (member, written) = if on_worker_in_place() {
            tokio::task::block_in_place(|| self.write_member(name, &mut |m: &mut Member| f(m)))?
        } else {
            let (store, name) = (self.clone(), name.to_string());
            applying(
                move |ask| store.write_member(&name, &mut |m: &mut Member| *m = ask(m.clone())),
                |mut m: Member| {
                    f(&mut m);
                    m
                },
            )
            .await?
        };
        drop(turn);
        self.sync_roster_off(written).await?;
        Ok(member)
    }

    async fn join_member(
        &self,
        name: &str,
        f: crate::JoinUpdate<'_>,
    ) -> Result<Option<Member>, StoreError> {
        let turn = self.inner.roster_writers.lock().await;
        let joined = if on_worker_in_place() {
            tokio::task::block_in_place(|| {
                self.write_join(name, &mut |m: Option<Member>| f(m.as_ref()))
            })?
        } else {
            let (store, owned) = (self.clone(), name.to_string());
            applying(
                move |ask| store.write_join(&owned, &mut |m: Option<Member>| ask(m)),
                |m: Option<Member>| f(m.as_ref()),
            )
            .await?
        };
        drop(turn);
        match joined {
            Joined::Written(member, written) => {
                self.sync_roster_off(written).await?;
                Ok(member.map(|m| *m))
            }
            Joined::Whole => crate::join_member_in_roster(self, name, f).await,
        }
    }
}

#[async_trait]
impl crate::MailboxStore for FileStore {
    async fn append(&self, envelope: &Envelope) -> Result<(), StoreError> {
        let envelope = envelope.clone();
        self.off(move |s| SyncMailbox::append(s, &envelope)).await
    }

    async fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        let envelopes = envelopes.to_vec();
        self.off(move |s| SyncMailbox::append_many(s, &envelopes))
            .await
    }

    async fn fetch(&self, agent: &str) -> Result<Batch, StoreError> {
        // Reading takes no lock (as `peek`): only corrupt lines, recorded as events, are
        // written, and that on the blocking pool.
        let batch = self.here(|s| SyncMailbox::peek(s, agent)).await?;
        if !batch.corrupt.is_empty() {
            let (agent, corrupt) = (agent.to_string(), batch.corrupt.clone());
            self.off(move |s| {
                for bad in &corrupt {
                    s.report_corrupt(&agent, bad);
                }
            })
            .await;
        }
        Ok(batch)
    }

    async fn peek(&self, agent: &str) -> Result<Batch, StoreError> {
        self.here(|s| SyncMailbox::peek(s, agent)).await
    }

    async fn ack(&self, agent: &str, token: AckToken) -> Result<(), StoreError> {
        let agent = agent.to_string();
        self.off(move |s| SyncMailbox::ack(s, &agent, token)).await
    }

    async fn watch(&self, agent: &str) -> Result<Box<dyn Watch>, StoreError> {
        self.watch_mailbox(agent)
    }

    async fn notify(&self, agent: &str) -> Result<(), StoreError> {
        self.notify_mailbox(agent)
    }
}

#[async_trait]
impl crate::EventLog for FileStore {
    async fn record(&self, event: &Event) -> Result<(), StoreError> {
        let event = event.clone();
        self.off(move |s| SyncEvents::record(s, &event)).await
    }

    async fn record_many(&self, events: &[Event]) -> Result<(), StoreError> {
        if events.is_empty() {
            // Nothing to append or sync: no hand-off to the blocking pool.
            return Ok(());
        }
        let events = events.to_vec();
        self.off(move |s| SyncEvents::record_many(s, &events)).await
    }

    async fn read_events(&self, from: EventCursor) -> Result<EventPage, StoreError> {
        self.off(move |s| SyncEvents::read_events(s, from)).await
    }

    async fn read_recent_events(&self, max: usize) -> Result<EventPage, StoreError> {
        self.off(move |s| SyncEvents::read_recent_events(s, max))
            .await
    }
}

#[async_trait]
impl crate::TranscriptStore for FileStore {
    async fn transcript_len(&self, agent: &str) -> Result<u64, StoreError> {
        self.here(|s| SyncTranscripts::transcript_len(s, agent))
            .await
    }

    async fn append_transcript_lines(&self, agent: &str, lines: &[u8]) -> Result<u64, StoreError> {
        let (agent, lines) = (agent.to_string(), lines.to_vec());
        self.off(move |s| SyncTranscripts::append_transcript_lines(s, &agent, &lines))
            .await
    }

    async fn read_transcript_from(
        &self,
        agent: &str,
        from: u64,
    ) -> Result<TranscriptBytes, StoreError> {
        let agent = agent.to_string();
        self.off(move |s| SyncTranscripts::read_transcript_from(s, &agent, from))
            .await
    }

    async fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError> {
        let agent = agent.to_string();
        self.off(move |s| SyncTranscripts::read_transcript(s, &agent))
            .await
    }
}

#[async_trait]
impl crate::RequestStore for FileStore {
    async fn create_request(&self, request: &Request) -> Result<(), StoreError> {
        let request = request.clone();
        self.off(move |s| SyncRequests::create_request(s, &request))
            .await
    }

    async fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError> {
        self.here(|s| SyncRequests::get_request(s, id)).await
    }

    async fn update_request(
        &self,
        id: &str,
        f: crate::RequestUpdate<'_>,
    ) -> Result<Request, StoreError> {
        let (store, id) = (self.clone(), id.to_string());
        applying(
            move |ask| {
                SyncRequests::update_request(&store, &id, &mut |r: &mut Request| {
                    let (after, outcome) = ask(r.clone());
                    *r = after;
                    outcome
                })
            },
            |mut r: Request| {
                let outcome = f(&mut r);
                (r, outcome)
            },
        )
        .await
    }

    async fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError> {
        self.here(|s| SyncRequests::list_requests(s, filter)).await
    }
}

#[async_trait]
impl crate::PresenceStore for FileStore {
    async fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        self.here(|s| SyncPresence::set_doing(s, agent, doing))
            .await
    }

    async fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        self.here(SyncPresence::doing).await
    }

    async fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        self.here(|s| SyncPresence::set_usage(s, agent, usage))
            .await
    }

    async fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        self.here(SyncPresence::usages).await
    }
}

#[async_trait]
impl crate::LivenessStore for FileStore {
    async fn acquire_lease(&self, agent: &str) -> Result<crate::Lease, StoreError> {
        let agent = agent.to_string();
        self.in_place(move |s| crate::live::acquire_lease(s.dir(), &agent))
            .await
    }

    async fn adopt_lease(&self, agent: &str, handoff: &str) -> Result<crate::Lease, StoreError> {
        let (agent, handoff) = (agent.to_string(), handoff.to_string());
        self.in_place(move |s| crate::live::adopt_lease(s.dir(), &agent, &handoff))
            .await
    }

    async fn probe_lease(&self, agent: &str) -> Result<crate::LeaseState, StoreError> {
        self.here(|s| crate::live::probe_lease(s.dir(), agent))
            .await
    }
}

#[async_trait]
impl crate::TaskStore for FileStore {
    async fn create_task(&self, new: &NewTask) -> Result<Task, StoreError> {
        let new = new.clone();
        self.off(move |s| SyncTasks::create_task(s, &new)).await
    }

    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.here(|s| SyncTasks::get_task(s, id)).await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskList, StoreError> {
        self.here(|s| SyncTasks::list_tasks(s, filter)).await
    }

    async fn update_task(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<Task, StoreError> {
        let store = self.clone();
        applying(
            move |ask| {
                SyncTasks::update_task(&store, id, &mut |t: &mut Task, blockers: &BlockerStatus| {
                    let (after, outcome) = ask((t.clone(), blockers.clone()));
                    *t = after;
                    outcome
                })
            },
            |(mut t, blockers): (Task, BlockerStatus)| {
                let outcome: Result<(), TaskError> = f(&mut t, &blockers);
                (t, outcome)
            },
        )
        .await
    }
}
