//! Team state that survives crashes and is shared between processes: the roster, mailboxes,
//! protocol requests, the task board, transcripts, the event log, presence and liveness. The
//! traits here are what the team runtime uses, in backend-neutral terms (opaque ack tokens and
//! event cursors, an async [`Watch`] for wake-ups, closure-based compare-and-set updates); the
//! team holds an `Arc<dyn TeamStore>` and nothing else. [`file::open`] opens the embedded
//! default backend under `.troupe/teams/<team>/`; `troupe-store-nats` holds the same traits on
//! a NATS JetStream server, for teams across machines.
//!
//! Every closure a store applies (`update_roster`, `update_member`, `join_member`,
//! `update_request`, `update_task`) may be called more than once: a backend without locks
//! retries it when another writer changed the record in between (compare-and-set). A closure
//! must derive what it does from its argument and reset whatever it reports on each call.
//!
//! The traits are async (the `async-trait` convention, see docs/decisions/0003-async-store.md):
//! callers await every call, and no call waits on a runtime thread. A backend that must wait
//! (the file backend takes `flock`s and fsyncs) does so on tokio's blocking pool itself; the
//! file backend's reads that take no lock, and its presence writes, run on the caller's task,
//! since they cost less than the hand-off (docs/decisions/0034-file-store-reads-in-place.md).
//! A closure a store applies runs on the caller's task (on a multi-threaded runtime the file
//! store's roster writes run in place, inside `block_in_place`), never on a blocking thread.
//!
//! Must not know: agents, the model or the CLI. It stores records of `troupe_protocol` types and
//! never interprets a conversation.

pub mod board;
pub mod error;
pub mod file;
pub mod live;
mod pending;
pub mod proc_stamp;
pub mod record;
pub mod rules;
pub mod tasks;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use troupe_protocol::{
    AgentUsage, Envelope, Event, Member, Request, RequestError, RequestKind, RequestStatus, Roster,
};

pub use error::{check_agent, StoreError};
pub use live::{Lease, LeaseGuard, LeaseHolder, LeaseState, Releasing};
pub use pending::PendingAreas;
pub use rules::release_owned_where;
pub use tasks::{CorruptTask, NewTask, TaskFilter, TaskList, TaskStore, TaskUpdate};
pub use troupe_durable::{CorruptLine, Durability};

/// Acknowledges one fetched batch: opaque, meaningful only to the store that issued it (the
/// file backend keeps a byte offset in it, a message broker would keep a sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckToken(u64);

impl AckToken {
    /// Wraps a backend's own position. Only backends call this.
    pub fn from_backend(raw: u64) -> AckToken {
        AckToken(raw)
    }

    /// The backend's own position. Only the backend that issued the token reads it.
    pub fn backend_position(self) -> u64 {
        self.0
    }
}

/// Where to resume reading the event log: opaque, issued by the store that is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventCursor(u64);

impl EventCursor {
    /// The start of the log (read everything).
    pub const START: EventCursor = EventCursor(0);

    /// Wraps a backend's own position. Only backends call this.
    pub fn from_backend(raw: u64) -> EventCursor {
        EventCursor(raw)
    }

    /// The backend's own position. Only the backend that issued the cursor reads it.
    pub fn backend_position(self) -> u64 {
        self.0
    }
}

/// What one fetch of a mailbox returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The messages, in log order.
    pub messages: Vec<Envelope>,
    /// Pass it to `ack` once the messages are persisted; `None` when the batch read nothing
    /// (no messages and no corrupt lines).
    pub ack: Option<AckToken>,
    /// Lines that were skipped because they did not parse.
    pub corrupt: Vec<CorruptLine>,
}

impl Batch {
    /// True when the batch holds nothing to ack (no messages and no corrupt lines).
    pub fn is_empty(&self) -> bool {
        self.ack.is_none()
    }
}

/// A page of the event log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventPage {
    /// The events, in log order.
    pub events: Vec<Event>,
    /// Where to read from next time.
    pub next: EventCursor,
    /// How many lines were skipped because they did not parse.
    pub corrupt: usize,
}

/// A teammate's transcript as read back for resume.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptRead {
    /// Every entry that parsed, in order.
    pub entries: Vec<Value>,
    /// How many lines were skipped because they did not parse.
    pub corrupt: usize,
}

/// Which requests `list_requests` returns; `None` fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFilter {
    /// Only requests in this status.
    pub status: Option<RequestStatus>,
    /// Only requests of this kind.
    pub kind: Option<RequestKind>,
    /// Only requests this agent opened or is addressed by.
    pub agent: Option<String>,
}

impl RequestFilter {
    /// True when the request passes every set field.
    pub fn matches(&self, r: &Request) -> bool {
        self.status.is_none_or(|s| r.status == s)
            && self.kind.is_none_or(|k| r.kind == k)
            && self
                .agent
                .as_deref()
                .is_none_or(|a| r.from == a || r.to == a)
    }
}

/// The closure [`RosterStore::update_roster`] applies.
pub type RosterUpdate<'a> = &'a mut (dyn FnMut(&mut Roster) + Send);

/// The closure [`RosterStore::update_member`] applies.
pub type MemberUpdate<'a> = &'a mut (dyn FnMut(&mut Member) + Send);

/// The closure [`RosterStore::join_member`] applies: given the member of that name on the
/// roster, if any, the member to put in its place, or `None` to change nothing.
pub type JoinUpdate<'a> = &'a mut (dyn FnMut(Option<&Member>) -> Option<Member> + Send);

/// The closure [`RequestStore::update_request`] applies.
pub type RequestUpdate<'a> = &'a mut (dyn FnMut(&mut Request) -> Result<(), RequestError> + Send);

/// The team roster, changed only by locked read-modify-write.
#[async_trait]
pub trait RosterStore: Send + Sync {
    /// The current roster; an empty one when none was written yet.
    async fn roster(&self) -> Result<Roster, StoreError>;

    /// Reads the roster, lets `f` change it, writes it back if it changed (atomically: under a
    /// lock, or compare-and-set with `f` applied again after a conflict), and returns the
    /// result.
    async fn update_roster(&self, f: RosterUpdate<'_>) -> Result<Roster, StoreError>;

    /// The member with this name (the first, should a roster hold a name twice), or `None`.
    /// A store that keeps the roster in memory answers without copying the whole roster.
    async fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        Ok(self.roster().await?.get(name).cloned())
    }

    /// Lets `f` change the member with this name and writes the change as
    /// [`RosterStore::update_roster`] would (atomically, synced unless only volatile fields
    /// changed); returns the member as written, or `None` (nothing written) when there is no
    /// such member. `f` must not rename the member; a rename is ignored. A store that keeps the
    /// roster in memory writes one member instead of copying the whole roster.
    async fn update_member(
        &self,
        name: &str,
        f: MemberUpdate<'_>,
    ) -> Result<Option<Member>, StoreError> {
        update_member_in_roster(self, name, f).await
    }

    /// Puts a member on the roster: `f` sees the member of this name (if any) and returns the
    /// one to put in its place, last in the order (its name is kept), or `None` to write
    /// nothing; returns what was written. Atomic and synced as
    /// [`RosterStore::update_roster`]; `f` may be applied more than once. A store that keeps
    /// the roster in memory adds a new name by appending that one member instead of copying the
    /// whole roster (a thousand spawns copied it a thousand times).
    async fn join_member(
        &self,
        name: &str,
        f: JoinUpdate<'_>,
    ) -> Result<Option<Member>, StoreError> {
        join_member_in_roster(self, name, f).await
    }
}

/// [`RosterStore::join_member`] through the whole roster: what the trait does by default, and
/// what the file store falls back to when the name is already on the roster.
pub async fn join_member_in_roster<S: RosterStore + ?Sized>(
    store: &S,
    name: &str,
    f: JoinUpdate<'_>,
) -> Result<Option<Member>, StoreError> {
    let mut joined = None;
    store
        .update_roster(&mut |roster: &mut Roster| {
            joined = f(roster.get(name)).map(|mut m| {
                m.name = name.to_string();
                m
            });
            if let Some(m) = &joined {
                roster.members.retain(|x| x.name != name);
                roster.members.push(m.clone());
            }
        })
        .await?;
    Ok(joined)
}

/// [`RosterStore::update_member`] through the whole roster: what the trait does by default,
/// and what a backend that keeps members apart falls back to for one it has not split out.
pub async fn update_member_in_roster<S: RosterStore + ?Sized>(
    store: &S,
    name: &str,
    f: MemberUpdate<'_>,
) -> Result<Option<Member>, StoreError> {
    let mut found = None;
    store
        .update_roster(&mut |roster: &mut Roster| {
            found = roster.get_mut(name).map(|m| {
                f(m);
                m.name = name.to_string();
                m.clone()
            });
        })
        .await?;
    Ok(found)
}

/// Durable, multi-writer mailboxes with at-least-once delivery.
#[async_trait]
pub trait MailboxStore: Send + Sync {
    /// Appends one message to the recipient's (`envelope.to`) log and wakes the recipient.
    async fn append(&self, envelope: &Envelope) -> Result<(), StoreError>;

    /// Appends many messages with one locked write and one sync per recipient.
    async fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError>;

    /// Reads the agent's unconsumed messages (from its cursor to the last complete line);
    /// corrupt lines are skipped, reported in the batch and recorded as events.
    async fn fetch(&self, agent: &str) -> Result<Batch, StoreError>;

    /// Like `fetch`, without recording anything (for inspection).
    async fn peek(&self, agent: &str) -> Result<Batch, StoreError>;

    /// Marks the batch `token` came with (and everything before it) consumed; call only once
    /// the messages are persisted. A repeated ack is harmless.
    async fn ack(&self, agent: &str, token: AckToken) -> Result<(), StoreError>;

    /// Starts watching the agent's mailbox: the returned [`Watch`] resolves after each append
    /// to it and each [`MailboxStore::notify`], from any process. One watcher per agent (a new
    /// one replaces the old); create it before checking for mail, so no wake is missed. Must be
    /// called inside a tokio runtime.
    async fn watch(&self, agent: &str) -> Result<Box<dyn Watch>, StoreError>;

    /// Wakes the agent's watcher without sending mail (a stop, an answered request).
    async fn notify(&self, agent: &str) -> Result<(), StoreError>;
}

/// Wake-ups for one agent; see [`MailboxStore::watch`].
#[async_trait]
pub trait Watch: Send {
    /// Resolves once something may have changed since the previous call (wake-ups that came
    /// while nobody waited are kept, several coalesce into one). It may resolve spuriously:
    /// callers re-check what they wait for.
    async fn changed(&mut self);
}

/// The team's append-only event log.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends one event.
    async fn record(&self, event: &Event) -> Result<(), StoreError>;

    /// Appends `events` in order, returning once every one of them is durable. A backend that
    /// can append several at once does (the file log writes them as one append and syncs it
    /// once: a queue of events written one after another paid a sync each); the default
    /// records them one by one, each tried even when an earlier one failed, and returns the
    /// first error.
    async fn record_many(&self, events: &[Event]) -> Result<(), StoreError> {
        let mut first = Ok(());
        for event in events {
            if let Err(e) = self.record(event).await {
                tracing::warn!(error = %e, kind = ?event.kind, "could not record an event");
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Reads the events after `from` ([`EventCursor::START`] for all) that are complete now.
    async fn read_events(&self, from: EventCursor) -> Result<EventPage, StoreError>;

    /// The last `max` events complete now (fewer when the log is shorter), with the cursor
    /// after them: where a follower of a long log starts without reading all of it. The
    /// default reads the whole log; backends that can read from the end do better.
    async fn read_recent_events(&self, max: usize) -> Result<EventPage, StoreError> {
        let mut page = self.read_events(EventCursor::START).await?;
        let skip = page.events.len().saturating_sub(max);
        page.events.drain(..skip);
        Ok(page)
    }
}

/// Parts of a team's state, as a set: what a change may have touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Areas(u16);

impl Areas {
    /// Nothing.
    pub const NONE: Areas = Areas(0);
    /// The roster (members, statuses, usage).
    pub const ROSTER: Areas = Areas(1);
    /// Mailboxes and their cursors.
    pub const MAIL: Areas = Areas(1 << 1);
    /// The event log.
    pub const EVENTS: Areas = Areas(1 << 2);
    /// Protocol requests.
    pub const REQUESTS: Areas = Areas(1 << 3);
    /// The task board.
    pub const TASKS: Areas = Areas(1 << 4);
    /// Presence: what members are doing now.
    pub const PRESENCE: Areas = Areas(1 << 5);
    /// Teammates' transcripts.
    pub const TRANSCRIPTS: Areas = Areas(1 << 6);
    /// Leases (who is alive). A process that dies drops its lease without a change being
    /// seen, so liveness is also worth asking now and then.
    pub const LIVENESS: Areas = Areas(1 << 7);
    /// Everything (a backend that cannot tell, or lost track).
    pub const ALL: Areas = Areas(0xff);

    /// True when the two sets share an area.
    pub fn intersects(self, other: Areas) -> bool {
        self.0 & other.0 != 0
    }

    /// True when no area is in the set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set as bits, for a backend that keeps it in an atomic.
    pub fn bits(self) -> u16 {
        self.0
    }

    /// The set from [`Areas::bits`]; unknown bits are dropped.
    pub fn from_bits(bits: u16) -> Areas {
        Areas(bits & Areas::ALL.0)
    }
}

impl std::ops::BitOr for Areas {
    type Output = Areas;
    fn bitor(self, rhs: Areas) -> Areas {
        Areas(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Areas {
    fn bitor_assign(&mut self, rhs: Areas) {
        self.0 |= rhs.0;
    }
}

/// Change notifications for a whole team, from any process; see [`TeamStore::watch_changes`].
#[async_trait]
pub trait ChangeWatch: Send {
    /// Resolves with the areas changed since the previous call; changes that came while
    /// nobody waited are kept and coalesce into one answer. Never resolves empty; it may
    /// name an area that did not change in the end (callers re-read what they show).
    async fn changed(&mut self) -> Areas;
}

/// Each teammate's conversation log, kept for resume: team state, like mail. The agent loop
/// writes a log of its own on this machine; for some backends that log is the transcript
/// itself, for others it is this machine's cache of it
/// ([`TranscriptStore::transcript_is_cached`]), and the team appends what the agent synced there
/// with [`TranscriptStore::append_transcript_lines`] and restores the cache from the store when
/// an agent rejoins on another machine.
///
/// The log is JSON lines, with the same rules on every backend: a line torn by a killed writer
/// is skipped and counted when read, and the next append starts a line of its own.
#[async_trait]
pub trait TranscriptStore: Send + Sync {
    /// True when the agent loop's own log on this machine is only a cache of a transcript the
    /// store keeps elsewhere (what the agent writes there must be appended to the store too);
    /// false when that log is the transcript itself.
    fn transcript_is_cached(&self) -> bool {
        false
    }

    /// True when the agent has a non-empty transcript (a rejoin continues it).
    async fn has_transcript(&self, agent: &str) -> Result<bool, StoreError> {
        Ok(self.transcript_len(agent).await? > 0)
    }

    /// The transcript's length in bytes (0 when there is none): cheap, for telling whether a
    /// local cache holds all of it.
    async fn transcript_len(&self, agent: &str) -> Result<u64, StoreError>;

    /// Appends whole lines (JSON, each ending with a newline) and makes them durable; a torn
    /// last line left by a killed writer is ended first, so it stays a line of its own (empty
    /// `lines` only does that). Returns the transcript's length after the append.
    async fn append_transcript_lines(&self, agent: &str, lines: &[u8]) -> Result<u64, StoreError>;

    /// Appends one entry (one JSON line) and makes it durable.
    async fn append_transcript(&self, agent: &str, entry: &Value) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(entry).map_err(|source| StoreError::Serialize {
            what: "transcript entry",
            source,
        })?;
        line.push(b'\n');
        self.append_transcript_lines(agent, &line).await.map(|_| ())
    }

    /// The transcript's complete lines from byte `from` on, for a follower (`team tail`):
    /// `from` 0 reads all of it; a torn last line is left out.
    async fn read_transcript_from(
        &self,
        agent: &str,
        from: u64,
    ) -> Result<TranscriptBytes, StoreError>;

    /// Reads every entry back, skipping and counting corrupt lines (a torn last line that
    /// still parses is kept: its writer died right before the newline).
    async fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError>;
}

/// Complete transcript lines read from a byte position on; see
/// [`TranscriptStore::read_transcript_from`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscriptBytes {
    /// Where `bytes` start.
    pub start: u64,
    /// The complete lines from `start` on, each ending with a newline.
    pub bytes: Vec<u8>,
    /// The transcript's whole length when read; shorter than the position asked for when the
    /// transcript was replaced (read it again from 0).
    pub len: u64,
}

impl TranscriptBytes {
    /// Where to read from next.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

/// Durable protocol requests; the FSM in `troupe_protocol::request` decides every change.
#[async_trait]
pub trait RequestStore: Send + Sync {
    /// Stores a newly opened request; an existing id is an error.
    async fn create_request(&self, request: &Request) -> Result<(), StoreError>;

    /// The request with this id, if it exists.
    async fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError>;

    /// Applies `f` to the request atomically (under a lock, or compare-and-set) and persists
    /// the outcome. A change
    /// `f` made is saved even when it returns an error (a late response still expires the
    /// request); the error is then returned as `StoreError::Request`.
    async fn update_request(&self, id: &str, f: RequestUpdate<'_>) -> Result<Request, StoreError>;

    /// Requests matching the filter, oldest first.
    async fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError>;

    /// Moves every overdue pending request to expired and returns them ([`rules::sweep_expired`]:
    /// the same rule on every backend).
    async fn sweep_expired(&self, now: u64) -> Result<Vec<Request>, StoreError> {
        rules::sweep_expired(self, now).await
    }
}

/// Volatile per-member state ("what it is doing now"): cheap to write, readable from other
/// processes, never synced and never locked against the roster. Losing it in a crash loses
/// nothing that matters.
#[async_trait]
pub trait PresenceStore: Send + Sync {
    /// Sets (or with `None` clears) what `agent` is doing.
    async fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError>;

    /// What every member is doing right now, by name (members doing nothing are absent).
    async fn doing(&self) -> Result<BTreeMap<String, String>, StoreError>;

    /// Publishes `agent`'s running token total (after each model reply). A backend without
    /// it keeps only the durable per-phase figure in the roster.
    async fn set_usage(&self, _agent: &str, _usage: &AgentUsage) -> Result<(), StoreError> {
        Ok(())
    }

    /// The running token totals published so far, by agent name (the lead's included).
    async fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        Ok(BTreeMap::new())
    }
}

/// Liveness, the one rule for every agent: an agent is alive while a live process holds its
/// lease (its own process, or the lead's for an in-process teammate). Nothing else — no pid,
/// no roster status — says whether an agent's process is alive.
#[async_trait]
pub trait LivenessStore: Send + Sync {
    /// Takes `agent`'s lease without waiting; while another live process holds it the answer
    /// is [`StoreError::LeaseHeld`] naming that process. The lease ends when the returned
    /// guard is dropped or the process ends, however it ends.
    async fn acquire_lease(&self, agent: &str) -> Result<Lease, StoreError>;

    /// Takes over `agent`'s lease that the process which started this one handed down
    /// (`handoff` is what [`Lease::pass_to_child`] returned there), so the agent is alive
    /// without a gap from before this process started.
    async fn adopt_lease(&self, agent: &str, handoff: &str) -> Result<Lease, StoreError>;

    /// Whether `agent`'s lease is held, and by whom, asked without taking it: a process that
    /// acquires the lease at the same moment is never refused because of a probe.
    async fn probe_lease(&self, agent: &str) -> Result<LeaseState, StoreError>;

    /// How long until `agent`'s lease lapses if its holder stops refreshing it now: `None`
    /// when it is not held, or when the backend's leases never lapse on their own (the file
    /// backend's end with their process).
    async fn lease_lapses_in(
        &self,
        _agent: &str,
    ) -> Result<Option<std::time::Duration>, StoreError> {
        Ok(None)
    }

    /// True while a live process holds `agent`'s lease.
    async fn is_alive(&self, agent: &str) -> Result<bool, StoreError> {
        Ok(self.probe_lease(agent).await?.is_held())
    }
}

/// Everything a team needs from its store, in one object-safe trait.
#[async_trait]
pub trait TeamStore:
    RosterStore
    + MailboxStore
    + EventLog
    + TranscriptStore
    + RequestStore
    + PresenceStore
    + LivenessStore
    + TaskStore
{
    /// The team's name.
    fn team(&self) -> &str;

    /// Starts watching the whole team for changes made by any process (the live dashboard,
    /// `troupe team log --follow`): no polling, and only what changed is named. Reading the
    /// store never causes a notification. Must be called inside a tokio runtime.
    async fn watch_changes(&self) -> Result<Box<dyn ChangeWatch>, StoreError> {
        Err(StoreError::Unsupported {
            what: "change notifications",
            backend: "this",
        })
    }
}

/// A team store shared by every part of a running team.
pub type SharedStore = Arc<dyn TeamStore>;
