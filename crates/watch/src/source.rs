//! Reading the team through its store (`dyn TeamStore` only: the dashboard names no file):
//! the parts of the state a change touched, the events appended since the last read, a
//! member's recent transcript — and the two things the person may do, answering a request
//! and sending a message. All of it blocks; the runner calls it off the async workers.

use std::collections::{BTreeMap, BTreeSet};

use troupe_protocol::{Envelope, Event, MailKind, Request, Roster, Task};
use troupe_store::{Areas, EventCursor, RequestFilter, StoreError, TeamStore};
use troupe_team::protocols::answer::{answer_as_person, Verdict};
use troupe_team::protocols::StoreCourier;
use troupe_team::LEAD;

use crate::model::TeamState;
use crate::transcript_view::{transcript_lines, TRANSCRIPT_LINES};

/// Fresh reads of the parts of the state that changed; `None` parts did not change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch {
    /// The roster.
    pub roster: Option<Roster>,
    /// What each agent is doing now.
    pub doing: Option<BTreeMap<String, String>>,
    /// Who is alive.
    pub alive: Option<BTreeSet<String>>,
    /// Every request, oldest first.
    pub requests: Option<Vec<Request>>,
    /// The board, and how many records could not be read.
    pub tasks: Option<(Vec<Task>, usize)>,
}

impl Patch {
    /// Applies the patch to a state.
    pub fn apply(self, state: &mut TeamState) {
        if let Some(roster) = self.roster {
            state.roster = roster;
        }
        if let Some(doing) = self.doing {
            state.doing = doing;
        }
        if let Some(alive) = self.alive {
            state.alive = alive;
        }
        if let Some(requests) = self.requests {
            state.requests = requests;
        }
        if let Some((tasks, corrupt)) = self.tasks {
            state.tasks = tasks;
            state.corrupt_tasks = corrupt;
        }
    }
}

/// Which agents a live process holds the lease of: the lead and every member that has not
/// ended (an ended one is shown as ended whatever its lease says).
pub async fn alive(store: &dyn TeamStore, roster: &Roster) -> BTreeSet<String> {
    let names = std::iter::once(LEAD).chain(
        roster
            .members
            .iter()
            .filter(|m| !m.status.is_ended())
            .map(|m| m.name.as_str()),
    );
    let mut alive = BTreeSet::new();
    for name in names {
        if store.is_alive(name).await.unwrap_or(false) {
            alive.insert(name.to_string());
        }
    }
    alive
}

/// Reads the parts of the state in `areas`.
pub async fn read_patch(store: &dyn TeamStore, areas: Areas) -> Result<Patch, StoreError> {
    let mut patch = Patch::default();
    // Each part is read only when its area changed: what members do changes with every tool
    // call, the roster far less often, leases only with the roster or their own files.
    let roster = if areas.intersects(Areas::ROSTER | Areas::LIVENESS) {
        let mut roster = store.roster().await?;
        troupe_team::shared::with_live_usage(store, &mut roster).await;
        Some(roster)
    } else {
        None
    };
    if let Some(roster) = &roster {
        patch.alive = Some(alive(store, roster).await);
    }
    patch.roster = roster;
    if areas.intersects(Areas::PRESENCE) {
        patch.doing = Some(store.doing().await.unwrap_or_default());
    }
    if areas.intersects(Areas::REQUESTS) {
        patch.requests = Some(store.list_requests(&RequestFilter::default()).await?);
    }
    if areas.intersects(Areas::TASKS) {
        let board = store.list_tasks(&Default::default()).await?;
        patch.tasks = Some((board.tasks, board.corrupt.len()));
    }
    Ok(patch)
}

/// The whole state, read now.
pub async fn read_state(store: &dyn TeamStore) -> Result<TeamState, StoreError> {
    let mut state = TeamState::default();
    read_patch(store, Areas::ALL).await?.apply(&mut state);
    Ok(state)
}

/// Events read from the log, with lines skipped and where to read next.
#[derive(Debug, Clone, Default)]
pub struct EventsRead {
    /// The events, in log order.
    pub events: Vec<Event>,
    /// Lines that did not parse.
    pub corrupt: usize,
    /// Where the next read starts.
    pub next: EventCursor,
}

/// The latest `max` events, to start from.
pub async fn recent_events(store: &dyn TeamStore, max: usize) -> Result<EventsRead, StoreError> {
    let page = store.read_recent_events(max).await?;
    Ok(EventsRead {
        events: page.events,
        corrupt: page.corrupt,
        next: page.next,
    })
}

/// The events appended after `cursor`.
pub async fn new_events(
    store: &dyn TeamStore,
    cursor: EventCursor,
) -> Result<EventsRead, StoreError> {
    let page = store.read_events(cursor).await?;
    Ok(EventsRead {
        events: page.events,
        corrupt: page.corrupt,
        next: page.next,
    })
}

/// A member's recent transcript as display lines (empty for the lead, whose conversation is
/// a session, not a team transcript).
pub async fn transcript(store: &dyn TeamStore, name: &str) -> Result<Vec<String>, StoreError> {
    if name == LEAD || !store.has_transcript(name).await? {
        return Ok(Vec::new());
    }
    let read = store.read_transcript(name).await?;
    Ok(transcript_lines(&read.entries, TRANSCRIPT_LINES))
}

/// Answers a request as `person`; the text says what was done, or why not.
pub async fn answer(
    store: &dyn TeamStore,
    person: &str,
    id: &str,
    verdict: Verdict,
    reason: Option<String>,
) -> Result<String, String> {
    answer_as_person(&StoreCourier(store), person, id, verdict, reason)
        .await
        .map(|r| {
            format!(
                "{} {} request {} of {} (recorded as {person})",
                verdict.past(),
                r.kind,
                r.id,
                r.from
            )
        })
        .map_err(|e| e.to_string())
}

/// Sends a message as `person`; the text says what was done, or why not.
pub async fn send(
    store: &dyn TeamStore,
    person: &str,
    to: &str,
    text: &str,
    now: u64,
) -> Result<String, String> {
    let env = Envelope::new(MailKind::Message, person, to, text, now);
    troupe_team::shared::deliver(store, &env)
        .await
        .map(|()| format!("sent to {to} (id {})", env.id))
        .map_err(|e| e.to_string())
}
