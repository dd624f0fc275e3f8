//! Cross-process stress and crash tests. Child processes are this same test binary re-run
//! with `TROUPE_STORE_CHILD` set, selecting the ignored `child_entry` test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use troupe_protocol::{Envelope, MailKind};
use troupe_store::StoreError;

const CHILD_ENV: &str = "TROUPE_STORE_CHILD";
const DIR_ENV: &str = "TROUPE_STORE_DIR";
const WRITERS: usize = 4;
const PER_WRITER: usize = 2_000;

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn spawn_child(mode: &str, dir: &Path) -> Child {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, mode)
        .env(DIR_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn child: {e}"))
}

/// Entry point of the child processes; does nothing when run as an ordinary test.
#[test]
#[ignore = "child-process entry point, started by the stress tests"]
fn child_entry() {
    let (Ok(mode), Ok(dir)) = (std::env::var(CHILD_ENV), std::env::var(DIR_ENV)) else {
        return;
    };
    let store = ok(troupe_store::file::open(Path::new(&dir), "stress"));
    if let Some(w) = mode.strip_prefix("writer:") {
        for i in 0..PER_WRITER {
            let env = Envelope::new(
                MailKind::Message,
                format!("w{w}"),
                "sink",
                format!("{w}:{i}"),
                0,
            );
            ok(store.append(&env));
        }
    } else if mode == "crashing-consumer" {
        // Fetch, report what was seen, then die before acking.
        let batch = ok(store.fetch("sink"));
        let ids: Vec<_> = batch.messages.iter().map(|m| m.id.as_str()).collect();
        // Leading newline: the test harness has already printed "test child_entry ... ".
        println!("\nIDS {}", ids.join(","));
        std::process::abort();
    }
}

#[test]
fn four_writer_processes_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = ok(troupe_store::file::open(dir.path(), "stress"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut wake = {
        let _entered = runtime.enter();
        ok(store.watch("sink"))
    };
    let mut writers: Vec<Child> = (0..WRITERS)
        .map(|w| spawn_child(&format!("writer:{w}"), dir.path()))
        .collect();

    let mut seen: HashSet<String> = HashSet::new();
    let mut duplicates = 0usize;
    let mut corrupt = 0usize;
    let mut last_seq: HashMap<String, i64> = HashMap::new();
    let mut out_of_order = 0usize;
    let mut running = WRITERS;
    loop {
        let batch = ok(store.fetch("sink"));
        corrupt += batch.corrupt.len();
        for m in &batch.messages {
            if !seen.insert(m.id.clone()) {
                duplicates += 1;
            }
            let seq: i64 = m
                .content
                .split(':')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(-1);
            let last = last_seq.entry(m.from.clone()).or_insert(-1);
            if seq != *last + 1 {
                out_of_order += 1;
            }
            *last = seq;
        }
        if !batch.is_empty() {
            // The consumer acks concurrently with the writers, truncating when caught up.
            if let Some(token) = batch.ack {
                ok(store.ack("sink", token));
            }
            continue;
        }
        if running == 0 {
            break; // every writer exited and the log is drained
        }
        // Woken by an append, or re-check after the bound (a writer's exit sends no wake).
        let _ = runtime.block_on(async {
            tokio::time::timeout(Duration::from_millis(200), wake.changed()).await
        });
        running = 0;
        for w in &mut writers {
            match w.try_wait() {
                Ok(Some(status)) => assert!(status.success(), "writer failed: {status}"),
                Ok(None) => running += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert_eq!(seen.len(), WRITERS * PER_WRITER);
    assert_eq!(duplicates, 0);
    assert_eq!(corrupt, 0);
    assert_eq!(out_of_order, 0, "a writer's messages arrived out of order");
    let log = dir.path().join("teams/stress/inbox/sink.jsonl");
    assert_eq!(std::fs::metadata(log).map(|m| m.len()).ok(), Some(0));
}

#[test]
fn consumer_killed_between_fetch_and_ack_gets_the_same_messages() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = ok(troupe_store::file::open(dir.path(), "stress"));
    let mut sent = Vec::new();
    for n in 0..5 {
        let env = Envelope::new(MailKind::Message, "lead", "sink", format!("m{n}"), n);
        sent.push(env.id.clone());
        ok(store.append(&env));
    }
    let child = spawn_child("crashing-consumer", dir.path());
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success(), "the consumer was meant to crash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen_by_child: Vec<String> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("IDS "))
        .map(|ids| ids.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    assert_eq!(seen_by_child, sent);
    // The restarted consumer sees exactly the same messages again.
    let batch = ok(store.fetch("sink"));
    let again: Vec<_> = batch.messages.iter().map(|m| m.id.clone()).collect();
    assert_eq!(again, sent);
}
