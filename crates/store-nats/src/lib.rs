//! The team store on NATS JetStream, for teams whose members run on several machines: the same
//! traits as the file backend (`troupe_store::TeamStore`), the same guarantees, over the
//! network.
//!
//! ```text
//! stream  troupe-<team>-mail     subjects troupe.<team>.mail.<agent>  work queue: a message
//!                                stays until its recipient acks it; Nats-Msg-Id = envelope id
//!         consumer mail-<agent>  durable pull consumer, explicit acks
//! stream  troupe-<team>-events   subject troupe.<team>.events; cursor = stream sequence
//! stream  troupe-<team>-transcripts  subjects troupe.<team>.transcript.<agent>: the bytes of
//!                                the agent's JSON-lines transcript, in messages of at most
//!                                256 KiB, each with its end offset (header Troupe-End)
//! kv      troupe-<team>-roster   key roster (team, lead, order), m.<member> — each its own
//!                                compare-and-set on the revision
//!         troupe-<team>-requests key <request id>           compare-and-set
//!         troupe-<team>-tasks    keys <task id>, next        compare-and-set
//!         troupe-<team>-presence keys <agent>, usage.<agent> memory, volatile
//!         troupe-<team>-live     key <agent>, board-lock     max age = the lease TTL
//! core    troupe.<team>.wake.<agent>   wake-ups without mail
//! ```
//!
//! The agent loop writes its transcript to a local file of the machine that runs it (a
//! [`FileStore`] of its workspace), a cache of the team's copy on the server: the team appends
//! what the agent synced there to the agent's subject, and restores the cache from it when the
//! agent rejoins on another machine. The client lives on the runtime that opened the store
//! (every method is async): a store is used on the runtime that opened it.
//!
//! Must not know: agents, the model or the team runtime: only `troupe_store`'s traits and
//! `troupe_protocol`'s records.

mod ack;
mod acked;
mod backoff;
mod cas;
mod changes;
mod cluster;
mod conn;
mod events;
mod kv;
mod lease;
mod mailbox;
mod names;
mod presence;
mod reads;
mod requests;
mod roster;
mod tasks;
mod transcripts;
pub mod url;
mod watch;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_protocol::now_ms;
use troupe_store::error::{check_agent, check_name};

use crate::cluster::{ensure_bucket, ensure_stream};
use async_nats::jetstream::{kv::Config as KvConfig, stream};
use troupe_store::file::FileStore;
use troupe_store::{ChangeWatch, Durability, SharedStore, StoreError, TeamStore};

pub use crate::cluster::{ClusterReport, Replicas};
use crate::conn::{Conn, Fail};
use crate::kv::Bucket;
use crate::names::Names;
pub use crate::url::NatsUrl;

/// Whether opening may create the team on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the team's streams and buckets when they are missing (a lead, a teammate).
    Create,
    /// Only open a team a lead created; `None` when there is none (inspection commands).
    Existing,
}

/// How long an unacked message waits before the server hands it out again: the fallback for a
/// consumer that died holding it (a restarted process takes its mailbox over at once).
const ACK_WAIT: Duration = Duration::from_secs(30);

/// How long the server de-duplicates a re-sent envelope id.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// Opens (creating as needed) `team`'s store on the server `url` names; transcripts go to the
/// local `.troupe` directory `troupe_dir`.
pub async fn open(url: &NatsUrl, troupe_dir: &Path, team: &str) -> Result<SharedStore, StoreError> {
    match NatsStore::open(url, troupe_dir, team, OpenMode::Create).await? {
        Some(store) => Ok(Arc::new(store)),
        None => Err(StoreError::Backend {
            action: format!("create team '{team}'"),
            server: url.display(),
            detail: "the server did not keep it".into(),
            hint: conn::HINT,
        }),
    }
}

/// Opens `team`'s store only if a lead created it; `Ok(None)` when the server has no such team.
pub async fn open_existing(
    url: &NatsUrl,
    troupe_dir: &Path,
    team: &str,
) -> Result<Option<SharedStore>, StoreError> {
    Ok(NatsStore::open(url, troupe_dir, team, OpenMode::Existing)
        .await?
        .map(|s| Arc::new(s) as SharedStore))
}

/// What the server (or cluster) `url` names holds for `team`, and what a new team would get
/// there: for `troupe doctor`.
pub async fn inspect(url: &NatsUrl, team: &str) -> Result<ClusterReport, StoreError> {
    let conn = Conn::connect(url).await?;
    cluster::inspect(&conn, url.replicas, team).await
}

/// The JetStream-backed team store; cheap to clone, usable from many threads.
#[derive(Clone)]
pub struct NatsStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for NatsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsStore")
            .field("team", &self.inner.team)
            .field("server", &self.inner.conn.server)
            .finish()
    }
}

struct Inner {
    team: String,
    names: Names,
    conn: Conn,
    mail: stream::Stream,
    events: stream::Stream,
    transcripts: stream::Stream,
    roster: Bucket,
    requests: Bucket,
    tasks: Bucket,
    presence: Bucket,
    live: Bucket,
    lease_ttl: Duration,
    /// True when the server is one of a cluster (see [`watch::send`]).
    cluster: bool,
    /// Where each agent's transcript ends on the server, for the agents this process appends to.
    transcript_tails: Mutex<HashMap<String, transcripts::Tail>>,
    /// Each agent's mailbox as this process consumes it.
    mailboxes: Mutex<HashMap<String, Arc<mailbox::Mailbox>>>,
    /// The envelope ids this process acknowledged lately, by agent.
    acked: Mutex<HashMap<String, acked::RecentlyAcked>>,
}

impl NatsStore {
    /// Connects and opens `team` (see [`OpenMode`]); transcripts go to `troupe_dir`.
    pub async fn open(
        url: &NatsUrl,
        troupe_dir: &Path,
        team: &str,
        mode: OpenMode,
    ) -> Result<Option<NatsStore>, StoreError> {
        check_name("team", team)?;
        let conn = Conn::connect(url).await?;
        let names = Names::new(team);
        let lease_ttl = url.lease_ttl;
        let servers = cluster::cluster_size(&conn);
        let replicas = Replicas::decide(url.replicas, servers);
        if mode == OpenMode::Existing {
            let bucket = names.bucket("roster");
            let found = conn
                .retry(&format!("look for team '{team}'"), {
                    let (js, bucket) = (conn.js.clone(), bucket.clone());
                    move || {
                        let (js, bucket) = (js.clone(), bucket.clone());
                        async move {
                            match js.get_key_value(&bucket).await {
                                Ok(kv) => Ok(kv::entry(&kv, "roster").await?.is_some()),
                                Err(e) if e.to_string().contains("not found") => Ok(false),
                                Err(e) => Err(Fail::Transient(e.to_string())),
                            }
                        }
                    }
                })
                .await?;
            if !found {
                return Ok(None);
            }
        }
        let mail = ensure_stream(
            &conn,
            stream::Config {
                name: names.mail_stream(),
                subjects: vec![names.mail_subjects()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                duplicate_window: DUPLICATE_WINDOW,
                allow_direct: true,
                ..Default::default()
            },
            replicas,
        )
        .await?;
        let events = ensure_stream(
            &conn,
            stream::Config {
                name: names.events_stream(),
                subjects: vec![names.events_subject()],
                retention: stream::RetentionPolicy::Limits,
                storage: stream::StorageType::File,
                allow_direct: true,
                ..Default::default()
            },
            replicas,
        )
        .await?;
        let transcripts = ensure_stream(
            &conn,
            stream::Config {
                name: names.transcripts_stream(),
                subjects: vec![names.transcript_subjects()],
                retention: stream::RetentionPolicy::Limits,
                storage: stream::StorageType::File,
                duplicate_window: DUPLICATE_WINDOW,
                allow_direct: true,
                ..Default::default()
            },
            replicas,
        )
        .await?;
        let durable = |what: &str| KvConfig {
            bucket: names.bucket(what),
            history: 1,
            storage: stream::StorageType::File,
            ..Default::default()
        };
        let roster = ensure_bucket(&conn, durable("roster"), replicas).await?;
        let requests = ensure_bucket(&conn, durable("requests"), replicas).await?;
        let tasks = ensure_bucket(&conn, durable("tasks"), replicas).await?;
        let presence = ensure_bucket(
            &conn,
            KvConfig {
                storage: stream::StorageType::Memory,
                ..durable("presence")
            },
            replicas,
        )
        .await?;
        let live = ensure_bucket(
            &conn,
            KvConfig {
                max_age: lease_ttl,
                ..durable("live")
            },
            replicas,
        )
        .await?;
        // The folder of the agents' local transcript caches on this machine.
        FileStore::open_transcripts(troupe_dir, team, Durability::Fsync)?;
        Ok(Some(NatsStore {
            inner: Arc::new(Inner {
                team: team.to_string(),
                names,
                conn,
                mail,
                events,
                transcripts,
                roster,
                requests,
                tasks,
                presence,
                live,
                lease_ttl,
                cluster: servers > 1,
                transcript_tails: Mutex::new(HashMap::new()),
                mailboxes: Mutex::new(HashMap::new()),
                acked: Mutex::new(HashMap::new()),
            }),
        }))
    }

    /// The servers, for people (no credentials).
    pub fn server(&self) -> &str {
        &self.inner.conn.server
    }

    /// Bytes this store's connection has (received, sent) so far, protocol overhead aside: for
    /// benches and tests of what an operation costs on the wire.
    pub fn traffic(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering;
        let stats = self.inner.conn.client.statistics();
        (
            stats.in_bytes.load(Ordering::Relaxed),
            stats.out_bytes.load(Ordering::Relaxed),
        )
    }

    /// How long a lease lives without a heartbeat on this team.
    pub fn lease_ttl(&self) -> Duration {
        self.inner.lease_ttl
    }
}

#[async_trait::async_trait]
impl TeamStore for NatsStore {
    fn team(&self) -> &str {
        &self.inner.team
    }

    async fn watch_changes(&self) -> Result<Box<dyn ChangeWatch>, StoreError> {
        Ok(Box::new(changes::NatsChangeWatch::start(self).await?))
    }
}

/// Serializes a record as JSON bytes.
fn to_bytes<T: serde::Serialize>(
    what: &'static str,
    value: &T,
) -> Result<bytes::Bytes, StoreError> {
    serde_json::to_vec(value)
        .map(bytes::Bytes::from)
        .map_err(|source| StoreError::Serialize { what, source })
}
