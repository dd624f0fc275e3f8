//! Key-value records with revisions: read, create-if-absent, compare-and-set, and a snapshot of
//! a whole bucket in one pass. Every change of the roster, a request or a task is a
//! compare-and-set on the revision it was computed from, so writers on different machines never
//! overwrite each other: the loser reads again and recomputes.

use std::sync::atomic::{AtomicBool, Ordering};

use async_nats::jetstream::consumer::{push, DeliverPolicy, ReplayPolicy};
use async_nats::jetstream::kv;
use bytes::Bytes;
use futures_util::StreamExt;
use troupe_store::StoreError;

use crate::cas::{self, Wrote};
use crate::conn::{Fail, Link};
use crate::reads::{read, At};

/// One bucket of the team.
#[derive(Clone)]
pub struct Bucket {
    /// The client's handle on it.
    pub kv: kv::Store,
    /// Its name.
    pub name: String,
}

/// `key`'s newest record in `kv`, `None` when absent or deleted; read as [`crate::reads`]
/// says, so a replicated bucket answers from its leader.
pub(crate) async fn entry(kv: &kv::Store, key: &str) -> Result<Option<Record>, Fail> {
    let subject = format!("{}{key}", kv.prefix);
    let Some(m) = read(&kv.stream, At::LastFor(&subject)).await? else {
        return Ok(None);
    };
    Ok((!crate::reads::is_deletion(&m)).then(|| Record {
        key: key.to_string(),
        value: m.payload,
        revision: m.sequence,
        age: std::time::Duration::try_from(time::OffsetDateTime::now_utc() - m.time).ok(),
    }))
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// What a compare-and-set write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cas {
    /// Written; the new revision.
    Done(u64),
    /// Someone else wrote first (or, for a create, the key exists): read again.
    Conflict,
}

/// A key's current value and revision.
#[derive(Debug, Clone)]
pub struct Record {
    /// The key.
    pub key: String,
    /// The stored bytes.
    pub value: Bytes,
    /// The revision a compare-and-set must name.
    pub revision: u64,
    /// How long ago the server stored this revision (as its clock and ours tell), when read
    /// by key.
    pub age: Option<std::time::Duration>,
}

impl Bucket {
    /// Where a key is, for people ("bucket troupe-blue-tasks, key 3").
    pub fn place(&self, key: &str) -> String {
        format!("bucket {}, key {key}", self.name)
    }

    /// Writes `value` under `key` whatever is there (volatile records only).
    pub async fn put(&self, link: &Link, key: &str, value: Bytes) -> Result<u64, StoreError> {
        let action = format!("write {}", self.place(key));
        link.retry(&action, || {
            let (kv, value) = (self.kv.clone(), value.clone());
            async move { Ok(kv.put(key, value).await?) }
        })
        .await
    }

    /// Every key's current value, in one pass over the bucket (deleted keys left out).
    pub async fn snapshot(&self, link: &Link) -> Result<Vec<Record>, StoreError> {
        self.snapshot_under(link, "").await
    }

    // Each operation retries as [`Link::retry`] does, so a compare-and-set loop or a
    // background task composes them on a link it owns.

    /// The key's value and revision; `None` when absent (never written, deleted, expired).
    pub async fn get(&self, link: &Link, key: &str) -> Result<Option<Record>, StoreError> {
        let action = format!("read {}", self.place(key));
        link.retry(&action, || {
            let (kv, key) = (self.kv.clone(), key.to_string());
            async move { entry(&kv, &key).await }
        })
        .await
    }

    /// Writes `value` under `key` if the key is absent.
    pub async fn create(&self, link: &Link, key: &str, value: Bytes) -> Result<Cas, StoreError> {
        let action = format!("create {}", self.place(key));
        self.tagged(link, &action, key, |id| {
            let (kv, value, client) = (self.kv.clone(), value.clone(), link.client.clone());
            async move { cas::create(&client, &kv, key, value, &id).await }
        })
        .await
    }

    /// Writes `value` under `key` if its revision is still `revision`.
    pub async fn update(
        &self,
        link: &Link,
        key: &str,
        value: Bytes,
        revision: u64,
    ) -> Result<Cas, StoreError> {
        let action = format!("update {}", self.place(key));
        self.tagged(link, &action, key, |id| {
            let (kv, value, client) = (self.kv.clone(), value.clone(), link.client.clone());
            async move { cas::write(&client, &kv, key, value, revision, &id).await }
        })
        .await
    }

    /// Runs one tagged write (see [`crate::cas`]), retried as [`Link::retry`] does. A conflict
    /// after an attempt whose answer was lost may be that attempt having landed: the id says.
    async fn tagged<F, Fut>(
        &self,
        link: &Link,
        action: &str,
        key: &str,
        attempt: F,
    ) -> Result<Cas, StoreError>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Result<Wrote, Fail>>,
    {
        let id = cas::write_id();
        let uncertain = AtomicBool::new(false);
        let outcome = link
            .retry(action, || {
                let (id, uncertain) = (id.clone(), &uncertain);
                let tried = attempt(id);
                async move {
                    let out = tried.await;
                    if out.is_err() {
                        uncertain.store(true, Ordering::Relaxed);
                    }
                    out
                }
            })
            .await?;
        let outcome = match outcome {
            Wrote::Conflict if uncertain.load(Ordering::Relaxed) => {
                let kv = self.kv.clone();
                link.retry(action, || {
                    let (kv, id) = (kv.clone(), id.clone());
                    async move { cas::settle(&kv, key, &id).await }
                })
                .await?
            }
            other => other,
        };
        Ok(match outcome {
            Wrote::Done(rev) => Cas::Done(rev),
            Wrote::Conflict => Cas::Conflict,
        })
    }

    /// Deletes `key`; with `revision`, only if it is still at that revision (a lease another
    /// holder took meanwhile is left alone).
    pub async fn delete(
        &self,
        link: &Link,
        key: &str,
        revision: Option<u64>,
    ) -> Result<(), StoreError> {
        let action = format!("delete {}", self.place(key));
        link.retry(&action, || {
            let kv = self.kv.clone();
            async move {
                match kv.delete_expect_revision(key, revision).await {
                    Ok(()) => Ok(()),
                    // Someone else's now: not ours to delete.
                    Err(e) if revision.is_some() && e.to_string().contains("wrong last") => Ok(()),
                    Err(e) => Err(Fail::Transient(e.to_string())),
                }
            }
        })
        .await
    }

    /// The current value of every key starting with `prefix` (a whole token followed by a
    /// dot, `usage.`; empty for all), in one pass, keys returned whole.
    pub async fn snapshot_under(
        &self,
        link: &Link,
        prefix: &str,
    ) -> Result<Vec<Record>, StoreError> {
        let action = format!("list bucket {}", self.name);
        link.retry(&action, || snapshot(&self.kv, &link.client, prefix))
            .await
    }
}

/// Reads the last value of every key through an ordered consumer (one request, then the
/// values stream in), stopping when the server says nothing is pending.
async fn snapshot(
    kv: &kv::Store,
    client: &async_nats::Client,
    prefix: &str,
) -> Result<Vec<Record>, Fail> {
    let consumer = kv
        .stream
        .create_consumer(push::OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: format!("{}{prefix}>", kv.prefix),
            replay_policy: ReplayPolicy::Instant,
            deliver_policy: DeliverPolicy::LastPerSubject,
            ..Default::default()
        })
        .await?;
    let mut out = Vec::new();
    if consumer.cached_info().num_pending == 0 {
        return Ok(out);
    }
    let mut messages = consumer.messages().await?;
    while let Some(message) = messages.next().await {
        let message = message?;
        let info = message.info().map_err(|e| Fail::Transient(e.to_string()))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
        let deleted = message.headers.as_ref().is_some_and(|h| {
            h.get("KV-Operation").is_some() || h.get("Nats-Marker-Reason").is_some()
        });
        if !deleted {
            if let Some(key) = message.subject.strip_prefix(kv.prefix.as_str()) {
                out.push(Record {
                    key: key.to_string(),
                    value: message.payload.clone(),
                    revision: seq,
                    age: None,
                });
            }
        }
        if pending == 0 {
            break;
        }
    }
    Ok(out)
}
