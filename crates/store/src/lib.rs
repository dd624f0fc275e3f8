//! Team state that survives crashes and is shared between processes: the roster, mailboxes,
//! protocol requests, transcripts and the event log. The traits here are what the team runtime
//! uses; [`FileStore`] is the embedded default backend under `.troupe/teams/<team>/`.

pub mod error;
pub mod file;
pub mod live;

use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use serde_json::Value;
use troupe_protocol::{Envelope, Event, Request, RequestError, RequestKind, RequestStatus, Roster};

pub use error::StoreError;
pub use file::FileStore;
pub use live::{acquire_lease, Lease, LeaseHolder};

/// How hard the store works to make a write survive a power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync every append and whole-file update (the default; survives power loss).
    #[default]
    Fsync,
    /// Leave data in the OS page cache: still safe against a killed process, not against a
    /// power loss. For tests and throwaway teams.
    OsBuffered,
}

/// A mailbox line that could not be parsed; it is skipped and reported, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptLine {
    /// Byte offset of the line in the mailbox log.
    pub offset: u64,
    /// The line's text (lossy UTF-8, shortened when long).
    pub text: String,
    /// Why it did not parse.
    pub error: String,
}

/// What one fetch of a mailbox returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The messages, in log order.
    pub messages: Vec<Envelope>,
    /// Offset the batch was read from (the cursor at the time).
    pub start: u64,
    /// Offset just after the last complete line read: pass it to `ack` once the messages are
    /// persisted.
    pub end: u64,
    /// Lines that were skipped because they did not parse.
    pub corrupt: Vec<CorruptLine>,
}

impl Batch {
    /// True when the batch holds nothing to ack (no messages and no corrupt lines).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// A page of the event log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventPage {
    /// The events, in log order.
    pub events: Vec<Event>,
    /// Offset to read from next time.
    pub next_offset: u64,
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

/// The team roster, changed only by locked read-modify-write.
pub trait RosterStore: Send + Sync {
    /// The current roster; an empty one when none was written yet.
    fn roster(&self) -> Result<Roster, StoreError>;

    /// Reads the roster under an exclusive lock, lets `f` change it, writes it back if it
    /// changed, and returns the result.
    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError>;
}

/// Durable, multi-writer mailboxes with at-least-once delivery.
pub trait MailboxStore: Send + Sync {
    /// Appends one message to the recipient's (`envelope.to`) log and wakes the recipient.
    fn append(&self, envelope: &Envelope) -> Result<(), StoreError>;

    /// Appends many messages with one locked write and one sync per recipient.
    fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError>;

    /// Reads the agent's unconsumed messages (from its cursor to the last complete line);
    /// corrupt lines are skipped, reported in the batch and recorded as events.
    fn fetch(&self, agent: &str) -> Result<Batch, StoreError>;

    /// Like `fetch`, without recording anything (for inspection).
    fn peek(&self, agent: &str) -> Result<Batch, StoreError>;

    /// Marks everything before `end` consumed; call only once the messages are persisted.
    fn ack(&self, agent: &str, end: u64) -> Result<(), StoreError>;

    /// Binds the agent's wake socket; each append to its mailbox sends it one datagram.
    fn wake_listener(&self, agent: &str) -> Result<UnixDatagram, StoreError>;

    /// Wakes the agent without sending mail.
    fn notify(&self, agent: &str) -> Result<(), StoreError>;
}

/// The team's append-only event log.
pub trait EventLog: Send + Sync {
    /// Appends one event.
    fn record(&self, event: &Event) -> Result<(), StoreError>;

    /// Reads the events from a byte offset (0 for all) up to the last complete line.
    fn read_events(&self, from_offset: u64) -> Result<EventPage, StoreError>;
}

/// Each teammate's conversation log, kept for resume.
pub trait TranscriptStore: Send + Sync {
    /// Where the agent's transcript lives.
    fn transcript_path(&self, agent: &str) -> Result<PathBuf, StoreError>;

    /// Appends one entry (one JSON line) and syncs it.
    fn append_transcript(&self, agent: &str, entry: &Value) -> Result<(), StoreError>;

    /// Reads every entry back, skipping and counting corrupt lines.
    fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError>;
}

/// Durable protocol requests; the FSM in `troupe_protocol::request` decides every change.
pub trait RequestStore: Send + Sync {
    /// Stores a newly opened request; an existing id is an error.
    fn create_request(&self, request: &Request) -> Result<(), StoreError>;

    /// The request with this id, if it exists.
    fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError>;

    /// Applies `f` to the request under an exclusive lock and persists the outcome. A change
    /// `f` made is saved even when it returns an error (a late response still expires the
    /// request); the error is then returned as `StoreError::Request`.
    fn update_request(
        &self,
        id: &str,
        f: &mut dyn FnMut(&mut Request) -> Result<(), RequestError>,
    ) -> Result<Request, StoreError>;

    /// Requests matching the filter, oldest first.
    fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError>;

    /// Moves every overdue pending request to expired and returns them.
    fn sweep_expired(&self, now: u64) -> Result<Vec<Request>, StoreError>;
}

/// Everything a team needs from its store, in one object-safe trait.
pub trait TeamStore:
    RosterStore + MailboxStore + EventLog + TranscriptStore + RequestStore
{
}

impl<T: RosterStore + MailboxStore + EventLog + TranscriptStore + RequestStore> TeamStore for T {}
