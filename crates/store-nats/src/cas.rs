//! Compare-and-set writes of one key, each tagged with an id of its own.
//!
//! A write whose answer was lost (a timeout, a leader change) is sent again. When the first
//! one had landed, the second finds the key moved on and reads as a lost race, and the bytes
//! alone cannot say whose write moved it: two writers that both counted 5 to 6 write the same
//! bytes, and taking the other's for ours loses an increment. So every write carries a
//! `Nats-Msg-Id`: the stream drops a repeat within its duplicate window and answers it as the
//! first, and a conflict after a lost answer is ours exactly when the key's newest message
//! carries our id.

use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv;
use async_nats::jetstream::message::PublishMessage;
use bytes::Bytes;

use crate::conn::Fail;
use crate::reads::{read, At};

/// A caller's update, applied in place by a compare-and-set loop to what it read: what to
/// write, or a refusal, which ends the loop at once.
pub(crate) type Apply<'a, A, B> =
    &'a mut (dyn FnMut(A) -> Result<B, troupe_store::StoreError> + Send + 'a);

/// What one write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrote {
    /// Stored at this revision.
    Done(u64),
    /// The key was not at the revision named.
    Conflict,
}

/// A fresh write id: unique to this process (its pid and start) and this write.
pub(crate) fn write_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let start = START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("w{:x}-{start:x}-{n:x}", std::process::id())
}

/// The subject `key` of `kv` is written to.
fn subject(kv: &kv::Store, key: &str) -> String {
    format!("{}{key}", kv.put_prefix.as_ref().unwrap_or(&kv.prefix))
}

/// Writes `value` under `key` if the key's newest revision is `revision` (0: if it never had
/// one), tagged `id`.
pub(crate) async fn write(
    client: &async_nats::Client,
    kv: &kv::Store,
    key: &str,
    value: Bytes,
    revision: u64,
    id: &str,
) -> Result<Wrote, Fail> {
    let js = async_nats::jetstream::new(client.clone());
    let publish = PublishMessage::build()
        .payload(value)
        .message_id(id)
        .expected_last_subject_sequence(revision);
    let acked = match js.send_publish(subject(kv, key), publish).await {
        Ok(ack) => ack.await,
        Err(e) => Err(e),
    };
    match acked {
        Ok(ack) => Ok(Wrote::Done(ack.sequence)),
        Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(Wrote::Conflict),
        Err(e) => Err(Fail::Transient(e.to_string())),
    }
}

/// Writes `value` under `key` if it has no value now: never written, or deleted.
pub(crate) async fn create(
    client: &async_nats::Client,
    kv: &kv::Store,
    key: &str,
    value: Bytes,
    id: &str,
) -> Result<Wrote, Fail> {
    if let Wrote::Done(rev) = write(client, kv, key, value.clone(), 0, id).await? {
        return Ok(Wrote::Done(rev));
    }
    match newest(kv, key).await? {
        Some(Newest {
            deleted: true,
            revision,
            ..
        }) => write(client, kv, key, value, revision, id).await,
        Some(Newest {
            id: Some(found),
            revision,
            ..
        }) if found == id => Ok(Wrote::Done(revision)),
        _ => Ok(Wrote::Conflict),
    }
}

/// Settles a conflict that followed an attempt whose answer was lost: ours if the key's newest
/// message carries our id.
pub(crate) async fn settle(kv: &kv::Store, key: &str, id: &str) -> Result<Wrote, Fail> {
    Ok(match newest(kv, key).await? {
        Some(Newest {
            id: Some(found),
            revision,
            deleted: false,
        }) if found == id => Wrote::Done(revision),
        _ => Wrote::Conflict,
    })
}

/// A key's newest message, as far as a write cares.
struct Newest {
    revision: u64,
    deleted: bool,
    id: Option<String>,
}

async fn newest(kv: &kv::Store, key: &str) -> Result<Option<Newest>, Fail> {
    let Some(m) = read(&kv.stream, At::LastFor(&format!("{}{key}", kv.prefix))).await? else {
        return Ok(None);
    };
    Ok(Some(Newest {
        revision: m.sequence,
        deleted: crate::reads::is_deletion(&m),
        id: m.headers.get("Nats-Msg-Id").map(|v| v.as_str().to_string()),
    }))
}
