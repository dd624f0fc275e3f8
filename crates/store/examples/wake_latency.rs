//! Cross-process wake latency: process A appends a message to B's mailbox;
//! B, idle and blocked on its wake socket (`wake_listener`), wakes, fetches and acks. Prints
//! p50/p90/p99/max of the time from the start of A's `append` to B's wake, to B holding the
//! message (fetched) and to B's ack. Targets: wake p50 < 5 ms, p99 < 50 ms.
//!
//! Run: `cargo run --release -p troupe-store --example wake_latency [N]` (default 1,000 sends
//! for each durability). Both processes read the same wall clock (`SystemTime`); A waits for
//! B's answer and then a short gap before each send, so B is always idle in `recv` when mail
//! comes. B here blocks in a plain `recv`; the team runtime awaits the same socket through
//! tokio, which adds a task wake-up on top.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use troupe_protocol::{Envelope, MailKind};
use troupe_store::file::FileStore;
use troupe_store::{Durability, MailboxStore};

type BoxError = Box<dyn std::error::Error>;

const RECIPIENT_FLAG: &str = "--recipient";
const RECIPIENT: &str = "bob";
const SENDER: &str = "alice";
const STOP: &str = "stop";
/// Pause before each send, so the recipient is back in `recv` (idle) when the mail comes.
const GAP: Duration = Duration::from_millis(1);
const TARGET_P50_MS: f64 = 5.0;
const TARGET_P99_MS: f64 = 50.0;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::Fsync => "fsync",
        Durability::OsBuffered => "os-buffered",
    }
}

fn parse_durability(s: &str) -> Result<Durability, BoxError> {
    match s {
        "fsync" => Ok(Durability::Fsync),
        "os-buffered" => Ok(Durability::OsBuffered),
        other => Err(format!("unknown durability {other}").into()),
    }
}

/// Process B: binds the wake socket, says "ready", then for every wake fetches and acks its
/// mail and prints `sent_ns wake_ns fetched_ns acked_ns` per message, until a "stop" message.
fn recipient(dir: &Path, team: &str, durability: Durability) -> Result<(), BoxError> {
    let rt = runtime()?;
    let store = FileStore::open_with(dir, team, durability)?;
    let wake = store.wake_socket(RECIPIENT)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut buf = [0u8; 64];
    loop {
        wake.recv(&mut buf)?;
        let woke = now_ns();
        let batch = rt.block_on(store.fetch(RECIPIENT))?;
        let fetched = now_ns();
        if batch.is_empty() {
            continue; // a wake whose mail an earlier fetch already took
        }
        if let Some(token) = batch.ack {
            rt.block_on(store.ack(RECIPIENT, token))?;
        }
        let acked = now_ns();
        for m in &batch.messages {
            if m.content == STOP {
                return Ok(());
            }
            writeln!(out, "{} {woke} {fetched} {acked}", m.content)?;
        }
        out.flush()?;
    }
}

/// Latencies of one send, in milliseconds from the start of the append.
#[derive(Debug, Clone, Copy)]
struct Sample {
    appended: f64,
    woke: f64,
    fetched: f64,
    acked: f64,
}

/// A column of the report: its label and how to read it from a sample.
type Stage = (&'static str, fn(&Sample) -> f64);

struct Recipient {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Recipient {
    fn start(dir: &Path, team: &str, durability: Durability) -> Result<Recipient, BoxError> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(RECIPIENT_FLAG)
            .arg(dir)
            .arg(team)
            .arg(durability_name(durability))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("recipient has no stdout")?;
        let mut r = Recipient {
            child,
            lines: BufReader::new(stdout),
        };
        let first = r.line()?;
        if first != "ready" {
            return Err(format!("recipient said {first:?} instead of ready").into());
        }
        Ok(r)
    }

    fn line(&mut self) -> Result<String, BoxError> {
        let mut line = String::new();
        if self.lines.read_line(&mut line)? == 0 {
            return Err("the recipient process ended early".into());
        }
        Ok(line.trim().to_string())
    }
}

fn run(root: &Path, durability: Durability, n: usize) -> Result<Vec<Sample>, BoxError> {
    let team = format!("wake-{}", durability_name(durability));
    let rt = runtime()?;
    let store = FileStore::open_with(root, &team, durability)?;
    let mut b = Recipient::start(root, &team, durability)?;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        std::thread::sleep(GAP);
        let sent = now_ns();
        let env = Envelope::new(MailKind::Message, SENDER, RECIPIENT, sent.to_string(), 0);
        rt.block_on(store.append(&env))?;
        let appended = now_ns();
        let line = b.line()?;
        let fields: Vec<u128> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        let [echo, woke, fetched, acked] = fields[..] else {
            return Err(format!("bad recipient line {line:?}").into());
        };
        if echo != sent {
            return Err(format!("recipient answered for {echo}, expected {sent}").into());
        }
        let ms = |t: u128| t.saturating_sub(sent) as f64 / 1e6;
        samples.push(Sample {
            appended: ms(appended),
            woke: ms(woke),
            fetched: ms(fetched),
            acked: ms(acked),
        });
    }
    rt.block_on(store.append(&Envelope::new(
        MailKind::Message,
        SENDER,
        RECIPIENT,
        STOP,
        0,
    )))?;
    let status = b.child.wait()?;
    if !status.success() {
        return Err(format!("recipient exited with {status}").into());
    }
    Ok(samples)
}

/// A runtime for this thread's store calls: the benchmark waits on its sockets itself.
fn runtime() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn sorted(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v
}

fn temp_root() -> PathBuf {
    std::env::temp_dir().join(format!("troupe-wake-bench-{}", std::process::id()))
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(RECIPIENT_FLAG) {
        let [_, _, dir, team, durability] = &args[..] else {
            return Err("usage: --recipient DIR TEAM DURABILITY".into());
        };
        return recipient(Path::new(dir), team, parse_durability(durability)?);
    }
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000)
        .max(1);
    let root = temp_root();
    std::fs::create_dir_all(&root)?;
    println!("cross-process wake latency: {n} sends, ms from the start of append");
    println!(
        "{:<12} {:<9} {:>8} {:>8} {:>8} {:>8}",
        "durability", "stage", "p50", "p90", "p99", "max"
    );
    let mut summary = Vec::new();
    for durability in [Durability::Fsync, Durability::OsBuffered] {
        let samples = run(&root, durability, n)?;
        let stages: [Stage; 4] = [
            ("appended", |s| s.appended),
            ("woke", |s| s.woke),
            ("fetched", |s| s.fetched),
            ("acked", |s| s.acked),
        ];
        for (stage, f) in stages {
            let v = sorted(&samples, f);
            println!(
                "{:<12} {stage:<9} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                durability_name(durability),
                quantile(&v, 0.5),
                quantile(&v, 0.9),
                quantile(&v, 0.99),
                quantile(&v, 1.0)
            );
        }
        let woke = sorted(&samples, |s| s.woke);
        let (p50, p99) = (quantile(&woke, 0.5), quantile(&woke, 0.99));
        let pass = p50 < TARGET_P50_MS && p99 < TARGET_P99_MS;
        summary.push(format!(
            "wake_{}_p50_ms={p50:.3} wake_{}_p99_ms={p99:.3} target_{}={}",
            durability_name(durability).replace('-', "_"),
            durability_name(durability).replace('-', "_"),
            durability_name(durability).replace('-', "_"),
            if pass { "PASS" } else { "MISS" }
        ));
    }
    println!("SUMMARY {}", summary.join(" "));
    std::fs::remove_dir_all(&root)?;
    Ok(())
}
