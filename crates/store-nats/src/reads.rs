//! Reads of single stream messages, consistent with what was written and acked before them.
//!
//! A direct get (the client's default) is answered by any replica of the stream. With one
//! server that is the only copy. With replicas, a follower may be a moment behind the leader:
//! a key just written may read as absent or old, and mail just acked as still there. A
//! compare-and-set loop built on such a read could take a path that loses an update. So a
//! replicated stream is read through the JetStream API's message get, which its leader
//! answers.

use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::{DirectGetErrorKind, LastRawMessageErrorKind, Stream};

use crate::conn::Fail;

/// Which message to read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At<'a> {
    /// The one at this sequence.
    Seq(u64),
    /// The first on this subject at or after this sequence.
    NextFor(&'a str, u64),
    /// The newest on this subject.
    LastFor(&'a str),
}

/// Whether a key-value message marks its key deleted or purged.
pub(crate) fn is_deletion(m: &StreamMessage) -> bool {
    m.headers
        .get("KV-Operation")
        .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"))
}

/// Whether `stream` has replicas to lag behind its leader.
pub(crate) fn replicated(stream: &Stream) -> bool {
    stream.cached_info().config.num_replicas > 1
}

/// The message `at` names in `stream`, `None` when there is none.
pub(crate) async fn read(stream: &Stream, at: At<'_>) -> Result<Option<StreamMessage>, Fail> {
    if replicated(stream) {
        let get = stream.raw_message_builder();
        let get = match at {
            At::Seq(seq) => get.sequence(seq),
            At::NextFor(subject, from) => get.sequence(from).next_by_subject(subject),
            At::LastFor(subject) => get.last_by_subject(subject),
        };
        return match get.send().await {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(Fail::Transient(e.to_string())),
        };
    }
    let got = match at {
        At::Seq(seq) => stream.direct_get(seq).await,
        At::NextFor(subject, from) => {
            stream
                .direct_get_next_for_subject(subject, Some(from))
                .await
        }
        At::LastFor(subject) => stream.direct_get_last_for_subject(subject).await,
    };
    match got {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
        Err(e) => Err(Fail::Transient(e.to_string())),
    }
}

/// Waits (up to `within`) until the message at `seq` is gone from a replicated work-queue
/// stream's leader. Its consumer confirms an ack once the consumer's replicas agree; the stream
/// drops the message when it applies that ack, a moment later. Waiting for it keeps the rule
/// one server gives: once an ack returns, nobody reads the mail as unacked. Past `within` (the
/// ack is confirmed all the same) the drop comes later.
pub(crate) async fn until_gone(stream: &Stream, seq: u64, within: std::time::Duration) {
    if !replicated(stream) {
        return;
    }
    let deadline = tokio::time::Instant::now() + within;
    let mut pause = std::time::Duration::from_millis(1);
    while let Ok(Some(_)) = read(stream, At::Seq(seq)).await {
        if tokio::time::Instant::now() + pause > deadline {
            tracing::debug!(seq, "an acked message is still in the stream");
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(50));
    }
}
