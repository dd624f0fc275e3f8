//! The file backend's own operations, synchronous: each takes `flock`s, reads, writes and
//! waits for its group commit on the calling thread. Only `adapter` calls them, always on
//! tokio's blocking pool; the async store traits are what everything else sees.

use std::collections::BTreeMap;
use std::path::PathBuf;

use troupe_protocol::{
    AgentUsage, BlockerStatus, Envelope, Event, Member, Request, RequestError, Roster, Task,
    TaskError, TaskId,
};

use crate::error::StoreError;
use crate::tasks::{NewTask, TaskFilter, TaskList};
use crate::TranscriptRead;
use crate::{AckToken, Batch, EventCursor, EventPage, RequestFilter, TranscriptBytes};

/// The roster, read and changed under the roster's lock. (The adapter changes it in two steps,
/// `write_roster`/`write_member` and then the sync, so the next writer goes on meanwhile; the
/// whole changes are the module's tests'.)
pub(crate) trait SyncRoster {
    fn roster(&self) -> Result<Roster, StoreError>;
    #[cfg(test)]
    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError>;
    fn member(&self, name: &str) -> Result<Option<Member>, StoreError>;
    #[cfg(test)]
    fn update_member(
        &self,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<Option<Member>, StoreError>;
}

/// Mailbox logs and their cursors.
pub(crate) trait SyncMailbox {
    fn append(&self, envelope: &Envelope) -> Result<(), StoreError>;
    fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError>;
    fn peek(&self, agent: &str) -> Result<Batch, StoreError>;
    fn ack(&self, agent: &str, token: AckToken) -> Result<(), StoreError>;
}

/// The event log.
pub(crate) trait SyncEvents {
    fn record(&self, event: &Event) -> Result<(), StoreError>;
    fn record_many(&self, events: &[Event]) -> Result<(), StoreError>;
    fn read_events(&self, from: EventCursor) -> Result<EventPage, StoreError>;
    fn read_recent_events(&self, max: usize) -> Result<EventPage, StoreError>;
}

/// Transcript files.
pub(crate) trait SyncTranscripts {
    fn transcript_file(&self, agent: &str) -> Result<PathBuf, StoreError>;
    fn transcript_len(&self, agent: &str) -> Result<u64, StoreError>;
    fn append_transcript_lines(&self, agent: &str, lines: &[u8]) -> Result<u64, StoreError>;
    fn read_transcript_from(&self, agent: &str, from: u64) -> Result<TranscriptBytes, StoreError>;
    fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError>;
}

/// Request records, each changed under its lock.
pub(crate) trait SyncRequests {
    fn create_request(&self, request: &Request) -> Result<(), StoreError>;
    fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError>;
    fn update_request(
        &self,
        id: &str,
        f: &mut dyn FnMut(&mut Request) -> Result<(), RequestError>,
    ) -> Result<Request, StoreError>;
    fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError>;
}

/// Presence files (volatile).
pub(crate) trait SyncPresence {
    fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError>;
    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError>;
    fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError>;
    fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError>;
}

/// Task records, changed under the board's and the task's locks.
pub(crate) trait SyncTasks {
    fn create_task(&self, new: &NewTask) -> Result<Task, StoreError>;
    fn get_task(&self, id: TaskId) -> Result<Task, StoreError>;
    fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskList, StoreError>;
    fn update_task(
        &self,
        id: TaskId,
        f: &mut dyn FnMut(&mut Task, &BlockerStatus) -> Result<(), TaskError>,
    ) -> Result<Task, StoreError>;
}
