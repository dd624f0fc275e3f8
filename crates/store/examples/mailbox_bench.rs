//! Mailbox throughput: producer threads append N messages while a consumer thread fetches
//! and acks in batches; prints end-to-end messages per second for each configuration.
//!
//! Run: `cargo run --release -p troupe-store --example mailbox_bench [N]` (default 50,000).
//! Single appends with fsync are measured on fewer messages (each waits for a sync). The store
//! lives under `TROUPE_BENCH_DIR` when set (to compare file systems), else the temp directory.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use troupe_protocol::{Envelope, MailKind};
use troupe_store::file::FileStore;
use troupe_store::{Durability, MailboxStore, StoreError};

struct Outcome {
    secs: f64,
    batches: usize,
}

async fn run(
    root: &Path,
    team: &str,
    durability: Durability,
    n: usize,
    chunk: usize,
    senders: usize,
) -> Result<Outcome, StoreError> {
    let store = FileStore::open_with(root, team, durability)?;
    let wake = store.wake_socket("sink")?;
    wake.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(StoreError::io("configure", root))?;
    let started = Instant::now();
    let producers: Vec<_> = (0..senders)
        .map(|p| {
            let store = store.clone();
            let share = n / senders + usize::from(p < n % senders);
            tokio::spawn(async move {
                let mut pending = Vec::with_capacity(chunk);
                for i in 0..share {
                    let env = Envelope::new(
                        MailKind::Message,
                        format!("lead{p}"),
                        "sink",
                        format!("message {i}"),
                        0,
                    );
                    if chunk == 1 {
                        store.append(&env).await?;
                    } else {
                        pending.push(env);
                        if pending.len() == chunk {
                            store.append_many(&pending).await?;
                            pending.clear();
                        }
                    }
                }
                store.append_many(&pending).await
            })
        })
        .collect();
    let mut seen = HashSet::with_capacity(n);
    let mut batches = 0;
    while seen.len() < n {
        let batch = store.fetch("sink").await?;
        if batch.is_empty() {
            let finished = producers.iter().all(|p| p.is_finished());
            if finished && store.peek("sink").await?.is_empty() && seen.len() < n {
                break; // a producer died; reported below
            }
            // A benchmark's own wait: the producers run on the other workers meanwhile.
            let _ = tokio::task::block_in_place(|| wake.recv(&mut [0u8; 64]));
            continue;
        }
        for m in batch.messages {
            seen.insert(m.id);
        }
        if let Some(token) = batch.ack {
            store.ack("sink", token).await?;
        }
        batches += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    for producer in producers {
        match producer.await {
            Ok(result) => result?,
            Err(_) => eprintln!("producer panicked"),
        }
    }
    if seen.len() != n {
        eprintln!("delivered {} of {n} messages", seen.len());
    }
    Ok(Outcome { secs, batches })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000);
    let base = std::env::var_os("TROUPE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = base.join(format!("troupe-mailbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let configs = [
        ("append, fsync", Durability::Fsync, n.min(2_000), 1, 1),
        (
            "append ×10 senders, fsync",
            Durability::Fsync,
            n.min(20_000),
            1,
            10,
        ),
        ("append_many(1000), fsync", Durability::Fsync, n, 1_000, 1),
        ("append, os-buffered", Durability::OsBuffered, n, 1, 1),
        (
            "append_many(1000), os-buffered",
            Durability::OsBuffered,
            n,
            1_000,
            1,
        ),
    ];
    println!(
        "{:<32} {:>9} {:>9} {:>9} {:>12}",
        "config", "messages", "batches", "seconds", "msg/s"
    );
    for (i, (label, durability, count, chunk, senders)) in configs.into_iter().enumerate() {
        let out = run(
            &dir,
            &format!("bench{i}"),
            durability,
            count,
            chunk,
            senders,
        )
        .await?;
        println!(
            "{label:<32} {count:>9} {:>9} {:>9.3} {:>12.0}",
            out.batches,
            out.secs,
            count as f64 / out.secs
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
