//! The event log: a stream; a cursor is the last stream sequence read, so a reader resumes
//! exactly where it stopped, whichever machine it reads from.

use async_nats::jetstream::consumer::{push, DeliverPolicy, ReplayPolicy};
use futures_util::StreamExt;
use troupe_protocol::Event;
use troupe_store::{EventCursor, EventLog, EventPage, StoreError};

use crate::conn::Fail;
use crate::NatsStore;

#[async_trait::async_trait]
impl EventLog for NatsStore {
    async fn record(&self, event: &Event) -> Result<(), StoreError> {
        let inner = &self.inner;
        let bytes = crate::to_bytes("event", event)?;
        let subject = inner.names.events_subject();
        // Each attempt carries the same id, so a retry after a lost answer is not logged twice.
        let id = troupe_protocol::ids::new_ulid().to_string();
        let js = inner.conn.js.clone();
        inner
            .conn
            .retry("record an event", move || {
                let (js, subject, bytes, id) =
                    (js.clone(), subject.clone(), bytes.clone(), id.clone());
                async move {
                    let publish = async_nats::jetstream::message::PublishMessage::build()
                        .payload(bytes)
                        .message_id(id);
                    js.send_publish(subject, publish).await?.await?;
                    Ok(())
                }
            })
            .await
    }

    async fn read_events(&self, from: EventCursor) -> Result<EventPage, StoreError> {
        let inner = &self.inner;
        let start = from.backend_position();
        let subject = inner.names.events_subject();
        let (stream, client) = (inner.events.clone(), inner.conn.client.clone());
        let (payloads, last) = inner
            .conn
            .retry("read the event log", move || {
                let (stream, subject, client) = (stream.clone(), subject.clone(), client.clone());
                async move { read_after(stream, client, subject, start).await }
            })
            .await?;
        let mut page = EventPage {
            events: Vec::with_capacity(payloads.len()),
            next: EventCursor::from_backend(last.max(start)),
            corrupt: 0,
        };
        for (seq, payload) in payloads {
            match serde_json::from_slice::<Event>(&payload) {
                Ok(e) => page.events.push(e),
                Err(e) => {
                    tracing::warn!(sequence = seq, error = %e, "skipping corrupt event");
                    page.corrupt += 1;
                }
            }
        }
        Ok(page)
    }
}

/// The payloads after stream sequence `start`, and the last sequence read; an ordered
/// consumer streams them, stopping when the server says nothing more is pending.
pub(crate) async fn read_after(
    stream: async_nats::jetstream::stream::Stream,
    client: async_nats::Client,
    subject: String,
    start: u64,
) -> Result<(Vec<(u64, bytes::Bytes)>, u64), Fail> {
    let info = stream.get_info().await?;
    if info.state.last_sequence <= start {
        return Ok((Vec::new(), start));
    }
    let consumer = stream
        .create_consumer(push::OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: subject,
            replay_policy: ReplayPolicy::Instant,
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: start + 1,
            },
            ..Default::default()
        })
        .await?;
    let mut out = Vec::new();
    let mut last = start;
    if consumer.cached_info().num_pending == 0 {
        return Ok((out, last));
    }
    let mut messages = consumer.messages().await?;
    while let Some(message) = messages.next().await {
        let message = message?;
        let info = message.info().map_err(|e| Fail::Transient(e.to_string()))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
        last = seq;
        out.push((seq, message.payload.clone()));
        if pending == 0 {
            break;
        }
    }
    Ok((out, last))
}
