//! The team store's figures on both backends, side by side: mail throughput
//! one message at a time and batched, send → idle recipient's wake across processes, and task
//! claim latency with 10 claimer processes. The NATS server is a loopback one
//! (`TROUPE_TEST_NATS_URL`, else one started from the installed `nats-server`); the file store
//! runs with its default durability (fsync).
//!
//! Run: `cargo bench -p troupe-store-nats --bench store_bench [-- --quick] [--recovery]`; the
//! last row is a three-server cluster whose mail stream leader is killed mid-run.
//! Targets (NATS): batched mail ≥ 20,000 msg/s; wake p50 < 2 ms, p99 < 10 ms; claim p99 < 10 ms.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use troupe_protocol::{Envelope, MailKind};
use troupe_store::{Durability, NewTask, SharedStore};
use troupe_store_nats::NatsUrl;

const CHILD: &str = "TROUPE_BENCH_CHILD";
const SPEC: &str = "TROUPE_BENCH_STORE";

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// `file|<dir>|<team>` or `nats|<url>|<dir>|<team>`.
async fn open(spec: &str) -> SharedStore {
    let parts: Vec<&str> = spec.split('|').collect();
    match parts[0] {
        "file" => {
            troupe_store::file::open_with(Path::new(parts[1]), parts[2], Durability::Fsync).unwrap()
        }
        _ => troupe_store_nats::open(
            &NatsUrl::parse(parts[1]).unwrap(),
            Path::new(parts[2]),
            parts[3],
        )
        .await
        .unwrap(),
    }
}

fn child(role: &str, spec: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD, role)
        .env(SPEC, spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Messages per second from the first append until the consumer has acked them all.
async fn throughput(store: &SharedStore, consumer: &SharedStore, n: usize, chunk: usize) -> f64 {
    let started = Instant::now();
    let producer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(chunk);
            for i in 0..n {
                batch.push(Envelope::new(
                    MailKind::Message,
                    "w",
                    "sink",
                    i.to_string(),
                    0,
                ));
                if batch.len() == chunk {
                    if chunk == 1 {
                        store.append(&batch[0]).await.unwrap();
                    } else {
                        store.append_many(&batch).await.unwrap();
                    }
                    batch.clear();
                }
            }
            if !batch.is_empty() {
                store.append_many(&batch).await.unwrap();
            }
        })
    };
    let mut got = 0;
    while got < n {
        let b = consumer.fetch("sink").await.unwrap();
        got += b.messages.len();
        if let Some(t) = b.ack {
            consumer.ack("sink", t).await.unwrap();
        }
        if b.messages.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    producer.await.unwrap();
    n as f64 / started.elapsed().as_secs_f64()
}

/// Child: idles on its watch; for each wake fetches, prints `sent wake fetched` per message,
/// acks; ends on a message saying "stop".
fn waiter(spec: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = open(spec).await;
        let mut watch = store.watch("bob").await.unwrap();
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY").unwrap();
        out.flush().unwrap();
        let debug = std::env::var_os("TROUPE_BENCH_DEBUG").is_some();
        loop {
            watch.changed().await;
            let woke = now_ns();
            if debug {
                eprintln!("waiter: woke");
            }
            let batch = store.fetch("bob").await.unwrap();
            let fetched = now_ns();
            if debug {
                eprintln!("waiter: fetched {}", batch.messages.len());
            }
            let mut stop = false;
            for m in &batch.messages {
                if m.content == "stop" {
                    stop = true;
                } else {
                    writeln!(out, "W {} {woke} {fetched}", m.content).unwrap();
                }
            }
            out.flush().unwrap();
            if let Some(t) = batch.ack {
                store.ack("bob", t).await.unwrap();
            }
            if stop {
                return;
            }
        }
    });
}

/// (p50, p99) milliseconds from the start of an append to the idle recipient's wake, and to
/// the message in its hands.
async fn wake_latency(spec: &str, store: &SharedStore, n: usize) -> ((f64, f64), (f64, f64)) {
    let mut c = child("waiter", spec);
    let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
    while lines.next().unwrap().unwrap() != "READY" {}
    let (mut wake, mut fetch) = (Vec::new(), Vec::new());
    for _ in 0..n {
        // Let the recipient get back to idle before each send.
        std::thread::sleep(Duration::from_millis(3));
        let sent = now_ns();
        store
            .append(&Envelope::new(
                MailKind::Message,
                "a",
                "bob",
                sent.to_string(),
                0,
            ))
            .await
            .unwrap();
        let line = lines.next().unwrap().unwrap();
        let f: Vec<u128> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        wake.push((f[1] - f[0]) as f64 / 1e6);
        fetch.push((f[2] - f[0]) as f64 / 1e6);
    }
    store
        .append(&Envelope::new(MailKind::Message, "a", "bob", "stop", 0))
        .await
        .unwrap();
    c.wait().unwrap();
    wake.sort_by(f64::total_cmp);
    fetch.sort_by(f64::total_cmp);
    (
        (percentile(&wake, 0.5), percentile(&wake, 0.99)),
        (percentile(&fetch, 0.5), percentile(&fetch, 0.99)),
    )
}

/// Child: waits for the go, then claims tasks 1..=n in order; prints `C <id> <won> <ns>` per
/// `claim_task` call.
async fn claimer(spec: &str, name: &str, n: u64) {
    let store = open(spec).await;
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    for id in 1..=n {
        let t = Instant::now();
        let won = store.claim_task(id, name, 1).await.is_ok();
        writeln!(out, "C {id} {} {}", u8::from(won), t.elapsed().as_nanos()).unwrap();
    }
    out.flush().unwrap();
}

/// (p50, p99) milliseconds of a `claim_task` call with `claimers` processes racing for every
/// one of `tasks` tasks, and the number of double claims (must be 0).
async fn claims(spec: &str, store: &SharedStore, claimers: usize, tasks: u64) -> (f64, f64, usize) {
    for i in 0..tasks {
        store
            .create_task(&NewTask {
                subject: format!("t{i}"),
                created_by: "lead".into(),
                ..NewTask::default()
            })
            .await
            .unwrap();
    }
    let mut kids: Vec<Child> = (0..claimers)
        .map(|i| child(&format!("claimer:c{i}:{tasks}"), spec))
        .collect();
    let mut readers: Vec<_> = kids
        .iter_mut()
        .map(|k| BufReader::new(k.stdout.take().unwrap()).lines())
        .collect();
    for r in &mut readers {
        while r.next().unwrap().unwrap() != "READY" {}
    }
    for k in &mut kids {
        k.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    let mut lat = Vec::new();
    let mut wins = vec![0usize; tasks as usize + 1];
    for r in readers {
        for line in r {
            let line = line.unwrap();
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.first() != Some(&"C") {
                continue;
            }
            wins[f[1].parse::<usize>().unwrap()] += usize::from(f[2] == "1");
            lat.push(f[3].parse::<f64>().unwrap() / 1e6);
        }
    }
    for k in &mut kids {
        k.wait().unwrap();
    }
    lat.sort_by(f64::total_cmp);
    let doubles = wins.iter().skip(1).filter(|w| **w != 1).count();
    (percentile(&lat, 0.5), percentile(&lat, 0.99), doubles)
}

fn main() {
    if let (Ok(role), Ok(spec)) = (std::env::var(CHILD), std::env::var(SPEC)) {
        if role == "waiter" {
            waiter(&spec);
        } else if let Some(rest) = role.strip_prefix("claimer:") {
            let (name, n) = rest.split_once(':').unwrap();
            runtime().block_on(claimer(&spec, name, n.parse().unwrap()));
        }
        return;
    }
    runtime().block_on(bench());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn bench() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (single, batched, wakes, tasks) = if quick {
        (500, 5_000, 100, 50)
    } else {
        (2_000, 50_000, 500, 200)
    };
    let nats_url = troupe_testkit::nats::url();
    // A three-server cluster of the bench's own: the same figures with three replicas, then
    // the time a sender is held up when the mail stream's leader is killed.
    let mut cluster = troupe_testkit::nats::NatsCluster::start(3);
    let cluster_url = cluster.url();
    println!("backend  single msg/s  batched msg/s  wake p50/p99 ms  in-hand p50/p99 ms  claim p50/p99 ms (10 procs)  double claims");
    // `--recovery`: only the cluster's time to recover.
    let backends: &[&str] = if std::env::args().any(|a| a == "--recovery") {
        &[]
    } else {
        &["file", "nats", "nats-r3"]
    };
    for &backend in backends {
        let dir = tempfile::tempdir().unwrap();
        let spec = |team: &str| match backend {
            "file" => format!("file|{}|{team}", dir.path().display()),
            "nats" => format!(
                "nats|{nats_url}|{}|{team}{}",
                dir.path().display(),
                std::process::id()
            ),
            _ => format!(
                "nats|{cluster_url}|{}|{team}{}",
                dir.path().display(),
                std::process::id()
            ),
        };
        let s1 = open(&spec("one")).await;
        let c1 = open(&spec("one")).await;
        let one = throughput(&s1, &c1, single, 1).await;
        let s2 = open(&spec("many")).await;
        let c2 = open(&spec("many")).await;
        let many = throughput(&s2, &c2, batched, 500).await;
        let w = spec("wake");
        let ((wake50, wake99), (hand50, hand99)) = wake_latency(&w, &open(&w).await, wakes).await;
        let c = spec("claim");
        let (claim50, claim99, doubles) = claims(&c, &open(&c).await, 10, tasks).await;
        println!(
            "{backend:<8} {one:>12.0}  {many:>13.0}  {wake50:>6.2} / {wake99:<6.2}  {hand50:>8.2} / {hand99:<8.2}  {claim50:>10.2} / {claim99:<10.2}  {doubles}"
        );
    }
    // A tool round of N teammates, each from its own thread with its own handle (as processes
    // would): working, a usage figure, idle — three member updates each.
    if !std::env::args().any(|a| a == "--recovery") {
        println!("roster round  N    file ms   nats ms   nats bytes/teammate");
        for n in [30usize, 100, 300] {
            let dir = tempfile::tempdir().unwrap();
            let file = format!("file|{}|round{n}", dir.path().display());
            let (file_ms, _) = roster_round(&file, n).await;
            let nats = format!(
                "nats|{nats_url}|{}|round{n}x{}",
                dir.path().display(),
                std::process::id()
            );
            let (nats_ms, bytes) = roster_round(&nats, n).await;
            println!("             {n:<4} {file_ms:>7.0}   {nats_ms:>7.0}   {bytes:>8}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (gap, p99, lost) = recovery(
        &mut cluster,
        &cluster_url,
        dir.path(),
        if quick { 600 } else { 3_000 },
    )
    .await;
    println!(
        "cluster of 3, mail stream leader SIGKILLed mid-run: longest send stall {gap:.0} ms (time to recover), send p99 {p99:.2} ms, lost or repeated {lost}"
    );
}

/// Sends `n` messages one at a time to a consumer on a three-server cluster and kills the mail
/// stream's leader a third of the way in: the longest a send waited (the time to recover), the
/// p99 of a send, and how many messages were lost or repeated (must be 0).
async fn recovery(
    cluster: &mut troupe_testkit::nats::NatsCluster,
    url: &str,
    dir: &Path,
    n: usize,
) -> (f64, f64, usize) {
    let team = format!("recover{}", std::process::id());
    let spec = format!("nats|{url}|{}|{team}", dir.display());
    let sender = open(&spec).await;
    let receiver = open(&spec).await;
    let report = troupe_store_nats::inspect(&NatsUrl::parse(url).unwrap(), &team)
        .await
        .unwrap();
    let leader = report
        .team
        .and_then(|(_, _, peers)| {
            peers
                .iter()
                .find_map(|p| p.strip_suffix(" (leader)").map(str::to_string))
        })
        .unwrap();
    let consumer = tokio::spawn(async move {
        let mut seen = std::collections::BTreeMap::<usize, usize>::new();
        while seen.len() < n {
            let batch = receiver.fetch("sink").await.unwrap();
            for m in &batch.messages {
                *seen.entry(m.content.parse().unwrap()).or_default() += 1;
            }
            if let Some(t) = batch.ack {
                receiver.ack("sink", t).await.unwrap();
            }
        }
        (0..n).filter(|i| seen.get(i) != Some(&1)).count()
    });
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        if i == n / 3 {
            cluster.kill(&leader);
        }
        let t = Instant::now();
        sender
            .append(&Envelope::new(
                MailKind::Message,
                "w",
                "sink",
                i.to_string(),
                0,
            ))
            .await
            .unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let lost = consumer.await.unwrap();
    cluster.restart(&leader);
    let gap = lat.iter().copied().fold(0.0, f64::max);
    lat.sort_by(f64::total_cmp);
    (gap, percentile(&lat, 0.99), lost)
}

/// Wall milliseconds of a round of `n` teammates (three member updates each, one thread and
/// one store handle per teammate) and, on NATS, the bytes on the wire per teammate.
async fn roster_round(spec: &str, n: usize) -> (f64, u64) {
    use troupe_protocol::{AgentStatus, Member};
    let lead = open(spec).await;
    lead.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members = (0..n)
            .map(|i| Member::new(format!("m{i}"), "worker", 0, 0))
            .collect();
    })
    .await
    .unwrap();
    let mut handles: Vec<(SharedStore, Option<troupe_store_nats::NatsStore>)> = Vec::new();
    for _ in 0..n {
        let parts: Vec<&str> = spec.split('|').collect();
        handles.push(if parts[0] == "nats" {
            let store = troupe_store_nats::NatsStore::open(
                &NatsUrl::parse(parts[1]).unwrap(),
                Path::new(parts[2]),
                parts[3],
                troupe_store_nats::OpenMode::Create,
            )
            .await
            .unwrap()
            .unwrap();
            (
                std::sync::Arc::new(store.clone()) as SharedStore,
                Some(store),
            )
        } else {
            (open(spec).await, None)
        });
    }
    let before: u64 = handles
        .iter()
        .filter_map(|(_, n)| n.as_ref().map(|s| s.traffic().0 + s.traffic().1))
        .sum();
    let started = Instant::now();
    let threads: Vec<_> = handles
        .iter()
        .enumerate()
        .map(|(i, (store, _))| {
            let store = store.clone();
            tokio::spawn(async move {
                let name = format!("m{i}");
                store
                    .update_member(&name, &mut |m| m.status = AgentStatus::Working)
                    .await
                    .unwrap();
                store
                    .update_member(&name, &mut |m| m.usage.output_tokens += 100)
                    .await
                    .unwrap();
                store
                    .update_member(&name, &mut |m| m.status = AgentStatus::Idle)
                    .await
                    .unwrap();
            })
        })
        .collect();
    for t in threads {
        t.await.unwrap();
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let after: u64 = handles
        .iter()
        .filter_map(|(_, n)| n.as_ref().map(|s| s.traffic().0 + s.traffic().1))
        .sum();
    (ms, (after - before) / n as u64)
}
