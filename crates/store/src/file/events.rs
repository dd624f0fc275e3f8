//! The event log `events.jsonl`: locked appends, reads from an offset.

use troupe_protocol::Event;

use super::sync::SyncEvents;
use super::{jsonl, to_line, FileStore};
use crate::error::StoreError;
use crate::{EventCursor, EventPage};

impl SyncEvents for FileStore {
    fn record(&self, event: &Event) -> Result<(), StoreError> {
        let line = to_line("event", event)?;
        self.append_durably(&self.events_path(), &line)
    }

    fn record_many(&self, events: &[Event]) -> Result<(), StoreError> {
        let mut lines = Vec::new();
        for event in events {
            lines.extend_from_slice(&to_line("event", event)?);
        }
        if lines.is_empty() {
            return Ok(());
        }
        // One locked append of whole lines, one sync: readers see every line whole, and no
        // caller hears "written" before the sync covering all of them returned.
        self.append_durably(&self.events_path(), &lines)
    }

    fn read_events(&self, from: EventCursor) -> Result<EventPage, StoreError> {
        let path = self.events_path();
        let chunk = jsonl::read_from(&path, from.backend_position())?;
        let (events, corrupt) = jsonl::parse_chunk::<Event>(&chunk);
        for bad in &corrupt {
            tracing::warn!(path = %path.display(), offset = bad.offset, error = %bad.error, "skipping corrupt event line");
        }
        Ok(EventPage {
            events,
            next: EventCursor::from_backend(chunk.end()),
            corrupt: corrupt.len(),
        })
    }

    fn read_recent_events(&self, max: usize) -> Result<EventPage, StoreError> {
        let path = self.events_path();
        let chunk = jsonl::read_tail(&path, max)?;
        let (mut events, corrupt) = jsonl::parse_chunk::<Event>(&chunk);
        for bad in &corrupt {
            tracing::warn!(path = %path.display(), offset = bad.offset, error = %bad.error, "skipping corrupt event line");
        }
        // Blank lines count towards `max` in the tail read; never return more than asked.
        let skip = events.len().saturating_sub(max);
        events.drain(..skip);
        Ok(EventPage {
            events,
            next: EventCursor::from_backend(chunk.end()),
            corrupt: corrupt.len(),
        })
    }
}
