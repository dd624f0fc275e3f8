//! Protocol request throughput: the lead opens N requests (default 1,000) round-robin across 10
//! teammates — each one a durable request file plus a mailbox envelope carrying its id — while
//! 10 teammate threads wake on their mail, answer through the request FSM and ack. Prints
//! requests per second and the open-to-resolved latency (p50, p99, max) for each durability.
//!
//! Run: `cargo run --release -p troupe-store --example requests_bench [N]` (the store under
//! `TROUPE_BENCH_DIR` when set).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use troupe_protocol::{Envelope, MailKind, Request, RequestKind};
use troupe_store::file::FileStore;
use troupe_store::{Durability, MailboxStore, RequestStore, StoreError};

const TEAMMATES: usize = 10;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

struct Outcome {
    secs: f64,
    latencies_ms: Vec<f64>,
}

fn io_err(root: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::io("configure", root)(source)
}

async fn teammate(
    store: FileStore,
    name: String,
    expected: usize,
    opened: Arc<Mutex<HashMap<String, Instant>>>,
    root: &Path,
) -> Result<Vec<f64>, StoreError> {
    let wake = store.wake_socket(&name)?;
    wake.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(io_err(root))?;
    let mut latencies = Vec::with_capacity(expected);
    let mut buf = [0u8; 16];
    while latencies.len() < expected {
        let batch = store.fetch(&name).await?;
        if batch.is_empty() {
            // Blocks until the next append wakes us (or the short timeout passes).
            let _ = wake.recv(&mut buf);
            continue;
        }
        for env in &batch.messages {
            let Some(id) = env.request_id.as_deref() else {
                continue;
            };
            let now = now_ms();
            store
                .update_request(id, &mut |r| {
                    r.respond(&name, 1, true, None, now).map(|_| ())
                })
                .await?;
            let started = opened.lock().ok().and_then(|m| m.get(id).copied());
            if let Some(started) = started {
                latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
        if let Some(token) = batch.ack {
            store.ack(&name, token).await?;
        }
    }
    Ok(latencies)
}

async fn run(root: &Path, durability: Durability, n: usize) -> Result<Outcome, StoreError> {
    let store = FileStore::open_with(root, "bench", durability)?;
    let opened: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let names: Vec<String> = (0..TEAMMATES).map(|i| format!("mate{i}")).collect();
    let mut workers = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let expected = n / TEAMMATES + usize::from(i < n % TEAMMATES);
        let (store, name, opened, root) = (
            store.clone(),
            name.clone(),
            opened.clone(),
            root.to_path_buf(),
        );
        workers.push(std::thread::spawn(move || {
            block_on(teammate(store, name, expected, opened, &root))
        }));
    }
    // Give every teammate time to bind its wake socket before the first append.
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    for i in 0..n {
        let to = &names[i % TEAMMATES];
        let now = now_ms();
        let request = Request::open(
            RequestKind::Shutdown,
            "lead",
            to,
            1,
            json!({"reason": "bench"}),
            now,
            Some(600_000),
        );
        if let Ok(mut m) = opened.lock() {
            m.insert(request.id.clone(), Instant::now());
        }
        store.create_request(&request).await?;
        store
            .append(
                &Envelope::new(MailKind::ShutdownRequest, "lead", to, "please stop", now)
                    .with_request(&request.id),
            )
            .await?;
    }
    let mut latencies_ms = Vec::with_capacity(n);
    for w in workers {
        match w.join() {
            Ok(result) => latencies_ms.extend(result?),
            Err(_) => eprintln!("a teammate thread panicked"),
        }
    }
    Ok(Outcome {
        secs: started.elapsed().as_secs_f64(),
        latencies_ms,
    })
}

/// Runs `f` to completion on a runtime of this thread's own.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    println!("{n} requests opened and resolved across {TEAMMATES} teammates");
    for (label, durability) in [
        ("fsync", Durability::Fsync),
        ("os-buffered", Durability::OsBuffered),
    ] {
        // `TROUPE_BENCH_DIR` picks the file system (tmpfs against ext4); else the temp dir.
        let base = std::env::var_os("TROUPE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
        let dir = tempfile::tempdir_in(base)?;
        let mut out = block_on(run(dir.path(), durability, n))?;
        out.latencies_ms.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{label:>12}: {:>8.0} requests/s ({:.2}s total, {} resolved); open→resolved p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            n as f64 / out.secs,
            out.secs,
            out.latencies_ms.len(),
            percentile(&out.latencies_ms, 50.0),
            percentile(&out.latencies_ms, 99.0),
            out.latencies_ms.last().copied().unwrap_or(0.0),
        );
    }
    Ok(())
}
