//! Change notifications for the NATS backend: core subscriptions to everything the team's
//! writers publish — its mail, wake, event and transcript subjects (`troupe.<team>.>`) and the
//! subjects of its key-value buckets (`$KV.troupe-<team>-<bucket>.>`) — each message mapped to the
//! [`Areas`] it touches. Stored messages are published on those subjects, so the server pushes
//! every write to the watcher as it happens; nobody polls. After a reconnection everything
//! counts as changed (what was published meanwhile was not seen). Transcript appends are
//! published on `troupe.<team>.transcript.<agent>`, so they are covered too; a lease that
//! lapses sends nothing (callers ask about liveness now and then, as [`Areas::LIVENESS`] says).

use std::sync::Arc;

use async_nats::Subject;
use async_trait::async_trait;
use futures_util::stream::{select_all, StreamExt};
use tokio::task::JoinHandle;
use troupe_store::{Areas, ChangeWatch, PendingAreas, StoreError};

use crate::NatsStore;

/// The key-value buckets of a team and what a write to each changes.
const BUCKETS: [(&str, Areas); 5] = [
    ("roster", Areas::ROSTER),
    ("requests", Areas::REQUESTS),
    ("tasks", Areas::TASKS),
    ("presence", Areas::PRESENCE),
    ("live", Areas::LIVENESS),
];

/// A watch on one team.
pub(crate) struct NatsChangeWatch {
    pending: Arc<PendingAreas>,
    task: JoinHandle<()>,
}

/// The areas a message on `subject` touches, for `team`.
fn area_of(team: &str, subject: &str) -> Areas {
    let own = format!("troupe.{team}.");
    if let Some(rest) = subject.strip_prefix(&own) {
        return match rest.split('.').next().unwrap_or_default() {
            "mail" => Areas::MAIL,
            // A wake without mail: a stop, or an answered request.
            "wake" => Areas::MAIL | Areas::REQUESTS,
            "events" => Areas::EVENTS,
            "transcript" => Areas::TRANSCRIPTS,
            _ => Areas::NONE,
        };
    }
    let Some(rest) = subject.strip_prefix("$KV.") else {
        return Areas::NONE;
    };
    let bucket = rest.split('.').next().unwrap_or_default();
    BUCKETS
        .iter()
        .find(|(what, _)| bucket.strip_prefix(&format!("troupe-{team}-")) == Some(*what))
        .map_or(Areas::NONE, |(_, areas)| *areas)
}

impl NatsChangeWatch {
    /// Subscribes (and makes sure the server has the subscriptions before returning, so no
    /// write made after this call is missed).
    pub(crate) async fn start(store: &NatsStore) -> Result<NatsChangeWatch, StoreError> {
        let inner = &store.inner;
        let team = inner.team.clone();
        let client = inner.conn.client.clone();
        let mut subjects = vec![format!("troupe.{team}.>")];
        subjects.extend(
            BUCKETS
                .iter()
                .map(|(what, _)| format!("$KV.{}.>", inner.names.bucket(what))),
        );
        let subs = inner
            .conn
            .retry("watch the team for changes", move || {
                let (client, subjects) = (client.clone(), subjects.clone());
                async move {
                    let mut subs = Vec::with_capacity(subjects.len());
                    for subject in subjects {
                        subs.push(client.subscribe(Subject::from(subject)).await?);
                    }
                    client.flush().await?;
                    Ok(subs)
                }
            })
            .await?;
        let pending = Arc::new(PendingAreas::default());
        let mut connections = inner.conn.connections.clone();
        connections.mark_unchanged();
        let seen = pending.clone();
        let task = inner.conn.handle().spawn(async move {
            let mut messages = select_all(subs);
            loop {
                tokio::select! {
                    message = messages.next() => match message {
                        Some(message) => seen.add(area_of(&team, message.subject.as_str())),
                        None => break, // the client is gone: so is the store
                    },
                    changed = connections.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        seen.add(Areas::ALL);
                    }
                }
            }
        });
        Ok(NatsChangeWatch { pending, task })
    }
}

impl Drop for NatsChangeWatch {
    fn drop(&mut self) {
        // Dropping the subscriptions with the task unsubscribes them.
        self.task.abort();
    }
}

#[async_trait]
impl ChangeWatch for NatsChangeWatch {
    async fn changed(&mut self) -> Areas {
        self.pending.take().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_map_to_their_areas_and_other_teams_to_none() {
        let cases = [
            ("troupe.t.mail.bob", Areas::MAIL),
            ("troupe.t.wake.bob", Areas::MAIL | Areas::REQUESTS),
            ("troupe.t.events", Areas::EVENTS),
            ("troupe.t.transcript.bob", Areas::TRANSCRIPTS),
            ("$KV.troupe-t-roster.roster", Areas::ROSTER),
            ("$KV.troupe-t-requests.r-1", Areas::REQUESTS),
            ("$KV.troupe-t-tasks.7", Areas::TASKS),
            ("$KV.troupe-t-presence.bob", Areas::PRESENCE),
            ("$KV.troupe-t-live.bob", Areas::LIVENESS),
            ("troupe.other.mail.bob", Areas::NONE),
            ("$KV.troupe-t2-roster.roster", Areas::NONE),
            ("$KV.troupe-t-unknown.x", Areas::NONE),
            ("troupe.t.something-new", Areas::NONE),
        ];
        for (subject, want) in cases {
            assert_eq!(area_of("t", subject), want, "{subject}");
        }
    }
}
