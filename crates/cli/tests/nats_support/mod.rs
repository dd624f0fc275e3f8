//! Shared helpers of the tests of teams across "hosts": separate workspace folders, nothing
//! shared but a real NATS server (`troupe_testkit::nats`), each process opening the team with
//! `--store nats://…`.

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use crate::common::troupe;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use troupe_store::{LeaseState, SharedStore};
use troupe_store_nats::NatsUrl;
use troupe_testkit::{FakeServer, Wire};

/// Bound for conditions a broken build might never reach; nothing asserts on time.
pub const BOUND: Duration = Duration::from_secs(120);

/// Seconds a lease lives without a heartbeat in these tests.
pub const TTL_SECS: u64 = 3;

/// One team on a NATS server: its URL (with the test TTL) and name.
#[derive(Debug, Clone)]
pub struct Team {
    pub url: String,
    pub name: String,
}

impl Team {
    /// A fresh team on the shared test server.
    pub fn new() -> Team {
        Team::on(&troupe_testkit::nats::url())
    }

    /// A fresh team on the server at `server`.
    pub fn on(server: &str) -> Team {
        Team {
            url: format!("{server}?lease_ttl={TTL_SECS}"),
            name: troupe_testkit::nats::fresh_team(),
        }
    }

    /// `--store URL --team NAME`.
    pub fn args(&self) -> [String; 4] {
        [
            "--store".into(),
            self.url.clone(),
            "--team".into(),
            self.name.clone(),
        ]
    }

    /// This test process's own handle on the team (its local files under `dir`).
    pub async fn store(&self, dir: &Path) -> SharedStore {
        troupe_store_nats::open(&NatsUrl::parse(&self.url).unwrap(), dir, &self.name)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `name`'s transcript file in workspace `ws`.
    pub fn transcript(&self, ws: &Path, name: &str) -> std::path::PathBuf {
        ws.join(format!(
            ".troupe/teams/{}/transcripts/{name}.jsonl",
            self.name
        ))
    }

    /// (distinct, total) mail ids recorded as delivered in `name`'s transcript in `ws`.
    pub fn delivered(&self, ws: &Path, name: &str) -> (HashSet<String>, usize) {
        crate::common::delivered_mail(&self.transcript(ws, name))
    }

    /// `troupe teammate --name NAME …` started in workspace `ws`, on this team.
    /// (`TROUPE_TEST_TEAMMATE_LOG=FILE` keeps their stderr there, for debugging a failure.)
    pub fn teammate(&self, ws: &Path, server: &FakeServer, name: &str, extra: &[&str]) -> Child {
        let stderr = match std::env::var_os("TROUPE_TEST_TEAMMATE_LOG") {
            Some(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_or_else(|_| Stdio::null(), Stdio::from),
            None => Stdio::null(),
        };
        troupe(ws, server, Wire::Anthropic)
            .args(["teammate", "--name", name, "--role", "tester"])
            .args(self.args())
            .args(["--permission-mode", "bypassPermissions"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap()
    }

    /// Starts `name` in `ws` and waits until that process holds its lease and is on the roster.
    pub async fn started(
        &self,
        ws: &Path,
        server: &FakeServer,
        name: &str,
        extra: &[&str],
    ) -> Child {
        let s = self.store(&ws.join(".probe")).await;
        let child = self.teammate(ws, server, name, extra);
        let pid = child.id();
        wait_for_async("the teammate to hold its lease and join", async || {
            holder(&s, name).await == Some(pid)
                && s.roster()
                    .await
                    .unwrap()
                    .get(name)
                    .is_some_and(|m| m.pid == Some(pid))
        })
        .await;
        child
    }

    /// A `troupe team|task …` command in workspace `ws` on this team.
    pub fn subcommand(&self, ws: &Path, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws)
            .env("HOME", ws.join(".home"))
            .args(args)
            .args(self.args())
            .output()
            .unwrap()
    }
}

/// The pid recorded by whoever holds `name`'s lease, if it is held.
pub async fn holder(store: &SharedStore, name: &str) -> Option<u32> {
    match store.probe_lease(name).await.unwrap() {
        LeaseState::Held(h) => h.map(|h| h.pid),
        LeaseState::Free => None,
    }
}

/// Waits until `done` holds, at most [`BOUND`], pausing on the runtime's timer: a test's store
/// client lives on the test's runtime, which a thread sleep would stall.
pub async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    troupe_testkit::wait_until_async(what, BOUND, async || done()).await
}

/// [`wait_for`] for a check that reads the store.
pub async fn wait_for_async(what: &str, done: impl AsyncFnMut() -> bool) {
    troupe_testkit::wait_until_async(what, BOUND, done).await
}

/// Kills a teammate process the way a vanished host would (SIGKILL, no goodbye) and waits
/// until its lease has lapsed on the server.
pub async fn kill_and_lapse(child: &mut Child, store: &SharedStore, name: &str) {
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for_async("the dead teammate's lease to lapse", async || {
        store.probe_lease(name).await.unwrap() == LeaseState::Free
    })
    .await;
}
