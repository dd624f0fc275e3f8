//! The backends under test, opened the way the team opens them, and what a test needs to
//! reach beneath the trait (writing garbage where a record lives).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use troupe_store::{Durability, SharedStore, StoreError};
use troupe_store_nats::NatsUrl;

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    File,
    /// One server.
    Nats,
    /// A three-server cluster (streams and buckets with three replicas).
    Cluster,
}

/// Runs a conformance test on both backends: `both!(name)` makes `name::file`, `name::nats` (one
/// server) and `name::cluster` (three).
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn file() {
                super::$name($crate::backend::Backend::File).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nats() {
                super::$name($crate::backend::Backend::Nats).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cluster() {
                super::$name($crate::backend::Backend::Cluster).await
            }
        }
    )*};
}

impl Backend {
    /// The server (list) a NATS backend's team lives on.
    pub fn server(self) -> String {
        match self {
            Backend::Cluster => troupe_testkit::nats::cluster_url(),
            _ => troupe_testkit::nats::url(),
        }
    }
}

/// A lease TTL short enough for tests that wait for a lapsed lease.
pub const TEST_LEASE_TTL_SECS: u64 = 2;

/// A fresh team on one backend; [`Fixture::open`] gives further handles on it, as other
/// processes would have.
pub struct Fixture {
    pub backend: Backend,
    pub team: String,
    pub dir: tempfile::TempDir,
    pub store: SharedStore,
    url: String,
}

impl Fixture {
    pub async fn new(backend: Backend) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let team = match backend {
            Backend::File => "team".to_string(),
            Backend::Nats | Backend::Cluster => troupe_testkit::nats::fresh_team(),
        };
        let url = match backend {
            Backend::File => String::new(),
            Backend::Nats | Backend::Cluster => {
                format!("{}?lease_ttl={TEST_LEASE_TTL_SECS}", backend.server())
            }
        };
        let store = open(backend, &url, dir.path(), &team)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Fixture {
            backend,
            team,
            dir,
            store,
            url,
        }
    }

    /// Another handle on the same team (another process, as far as the store knows).
    pub async fn open(&self) -> SharedStore {
        open(self.backend, &self.url, self.dir.path(), &self.team)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// What a child process needs to open the same team: `backend|url|dir|team`.
    pub fn spec(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            match self.backend {
                Backend::File => "file",
                Backend::Nats | Backend::Cluster => "nats",
            },
            self.url,
            self.dir.path().display(),
            self.team
        )
    }

    /// The lease TTL: how long a dead holder's lease may still look held.
    pub fn lease_lapse(&self) -> Duration {
        match self.backend {
            Backend::File => Duration::ZERO,
            Backend::Nats | Backend::Cluster => Duration::from_secs(TEST_LEASE_TTL_SECS),
        }
    }

    /// Stores `bytes` as a message in `agent`'s mailbox, bypassing the store (a writer that
    /// wrote garbage).
    pub fn raw_mail(&self, agent: &str, bytes: &[u8]) {
        match self.backend {
            Backend::File => {
                use std::io::Write;
                let path = self.file_dir().join("inbox").join(format!("{agent}.jsonl"));
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .unwrap();
                f.write_all(bytes).unwrap();
                f.write_all(b"\n").unwrap();
            }
            Backend::Nats | Backend::Cluster => {
                let subject = format!("troupe.{}.mail.{agent}", self.team);
                let bytes = bytes.to_vec();
                self.nats(move |js| async move {
                    js.publish(subject, bytes.into())
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                });
            }
        }
    }

    /// Another handle on the same team from another machine: its local files under `dir`.
    /// Only a backend whose transcripts are cached locally keeps them apart from `dir`; the
    /// file backend's team lives in `dir`, so it is this fixture's own directory there.
    pub async fn open_on_another_machine(&self, dir: &Path) -> SharedStore {
        let dir = match self.backend {
            Backend::File => self.dir.path(),
            Backend::Nats | Backend::Cluster => dir,
        };
        open(self.backend, &self.url, dir, &self.team)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Appends `bytes` to `agent`'s transcript as they are (no newline added), bypassing the
    /// store: a writer that died in the middle of a line.
    pub fn raw_transcript(&self, agent: &str, bytes: &[u8]) {
        match self.backend {
            Backend::File => {
                use std::io::Write;
                let dir = self.file_dir().join("transcripts");
                std::fs::create_dir_all(&dir).unwrap();
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(dir.join(format!("{agent}.jsonl")))
                    .unwrap();
                f.write_all(bytes).unwrap();
            }
            Backend::Nats | Backend::Cluster => {
                let subject = format!("troupe.{}.transcript.{agent}", self.team);
                let bytes = bytes.to_vec();
                self.nats(move |js| async move {
                    js.publish(subject, bytes.into())
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                });
            }
        }
    }

    /// Appends `bytes` to the event log as one entry, bypassing the store.
    pub fn raw_event(&self, bytes: &[u8]) {
        match self.backend {
            Backend::File => {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(self.file_dir().join("events.jsonl"))
                    .unwrap();
                f.write_all(bytes).unwrap();
                f.write_all(b"\n").unwrap();
            }
            Backend::Nats | Backend::Cluster => {
                let subject = format!("troupe.{}.events", self.team);
                let bytes = bytes.to_vec();
                self.nats(move |js| async move {
                    js.publish(subject, bytes.into())
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                });
            }
        }
    }

    /// Replaces a whole record with `bytes`, bypassing the store: `what` is `roster` or
    /// `task:<id>`.
    pub fn raw_record(&self, what: &str, bytes: &[u8]) {
        let (bucket, key, file) = match what.split_once(':') {
            Some(("task", id)) => (
                "tasks",
                id.to_string(),
                PathBuf::from(format!("tasks/{id}.json")),
            ),
            _ => ("roster", "roster".to_string(), PathBuf::from("roster.json")),
        };
        match self.backend {
            Backend::File => {
                let path = self.file_dir().join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
            Backend::Nats | Backend::Cluster => {
                let bucket = format!("troupe-{}-{bucket}", self.team);
                let bytes = bytes.to_vec();
                self.nats(move |js| async move {
                    let kv = js.get_key_value(bucket).await.unwrap();
                    kv.put(key, bytes.into()).await.unwrap();
                });
            }
        }
    }

    /// Reads a whole record back, bypassing the store (to check it was not overwritten).
    pub fn read_raw_record(&self, what: &str) -> Vec<u8> {
        match self.backend {
            Backend::File => std::fs::read(self.file_dir().join(format!("{what}.json"))).unwrap(),
            Backend::Nats | Backend::Cluster => {
                let bucket = format!("troupe-{}-{what}", self.team);
                let key = what.to_string();
                let (tx, rx) = std::sync::mpsc::channel();
                self.nats(move |js| async move {
                    let kv = js.get_key_value(bucket).await.unwrap();
                    let v = kv.get(key).await.unwrap().unwrap();
                    tx.send(v.to_vec()).unwrap();
                });
                rx.recv().unwrap()
            }
        }
    }

    fn file_dir(&self) -> PathBuf {
        self.dir.path().join("teams").join(&self.team)
    }

    /// Runs `f` with a JetStream context of its own on a throwaway runtime, on a thread of
    /// its own (the test's runtime may be this thread's).
    fn nats<F, Fut>(&self, f: F)
    where
        F: FnOnce(async_nats::jetstream::Context) -> Fut + Send,
        Fut: std::future::Future<Output = ()>,
    {
        let server = self.backend.server();
        std::thread::scope(|scope| {
            scope
                .spawn(move || Self::nats_on_own_runtime(&server, f))
                .join()
                .unwrap();
        });
    }

    fn nats_on_own_runtime<F, Fut>(server: &str, f: F)
    where
        F: FnOnce(async_nats::jetstream::Context) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let first = server.split(',').next().unwrap_or_default().to_string();
            let client = async_nats::connect(first).await.unwrap();
            f(async_nats::jetstream::new(client.clone())).await;
            client.flush().await.unwrap();
        });
    }
}

impl Drop for Fixture {
    /// Removes the team's streams and buckets from the server, so a run's replicated groups do
    /// not pile up in the cluster (each keeps its servers busy with heartbeats).
    fn drop(&mut self) {
        if self.backend == Backend::File || std::thread::panicking() {
            return;
        }
        let marker = format!("troupe-{}-", self.team);
        self.nats(move |js| async move {
            use futures_util::StreamExt;
            let mut ours = Vec::new();
            let mut names = js.stream_names();
            while let Some(Ok(name)) = names.next().await {
                if name.contains(&marker) {
                    ours.push(name);
                }
            }
            for name in ours {
                let _ = js.delete_stream(&name).await;
            }
        });
    }
}

/// Opens a team on a backend the way the team does.
pub async fn open(
    backend: Backend,
    url: &str,
    dir: &Path,
    team: &str,
) -> Result<SharedStore, StoreError> {
    match backend {
        Backend::File => troupe_store::file::open_with(dir, team, Durability::OsBuffered),
        Backend::Nats | Backend::Cluster => {
            troupe_store_nats::open(&NatsUrl::parse(url)?, dir, team).await
        }
    }
}

/// Opens the store a child's `spec` names.
pub async fn open_spec(spec: &str) -> SharedStore {
    let mut parts = spec.splitn(4, '|');
    let (b, url, dir, team) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let backend = if b == "nats" {
        Backend::Nats
    } else {
        Backend::File
    };
    open(backend, url, Path::new(dir), team)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Unwraps a store result, panicking with the store's own message.
pub fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until `f` holds, at most `limit` (a bound against hanging, never a timing assertion).
pub async fn eventually(limit: Duration, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !f().await {
        assert!(
            start.elapsed() < limit,
            "{what}: still not so after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
