//! The dashboard's figures, measured on the release `troupe team watch` in a
//! real pseudo-terminal whose output is parsed by a terminal emulator:
//!
//! - latency from an event written (the append returned) to it drawn on screen, on a quiet
//!   team and while 100 teammates produce 1,000 events a second (plus 100 presence updates a
//!   second), p50/p99/max (target p99 < 50 ms); after the load, whether every event was read;
//! - CPU of the dashboard under that load and while the team is idle (target ≈ 0);
//! - peak memory with 100 members and 100,000 events in the log (target < 30 MiB).
//!
//! Run: `cargo bench -p troupe-cli --bench watch [-- --markers 200 --load-secs 10]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

#[path = "../tests/pty_support/mod.rs"]
mod pty_support;
mod support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pty_support::Pty;
use support::{arg_value, ms, quantile, verdict};
use troupe_protocol::{AgentStatus, Event, EventKind, Member};
use troupe_store::{Durability, EventCursor, Lease, SharedStore};
use troupe_testkit::TempWorkspace;

const MEMBERS: usize = 100;
const LIMIT: Duration = Duration::from_secs(120);
const TARGET_P99_MS: f64 = 50.0;
const TARGET_IDLE_CPU_PCT: f64 = 1.0;
const TARGET_RSS_MIB: f64 = 30.0;

fn mate(i: usize) -> String {
    format!("mate-{i:03}")
}

/// A team of `MEMBERS` teammates, every one of them (and the lead) alive: this process holds
/// their leases, as a lead running them in process would.
async fn team(ws: &Path) -> (SharedStore, Vec<Lease>) {
    let s = troupe_store::file::open_with(&ws.join(".troupe"), "default", Durability::OsBuffered)
        .unwrap();
    s.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members = (0..MEMBERS)
            .map(|i| {
                let mut m = Member::new(mate(i), "worker", 1, 1);
                if i % 2 == 1 {
                    m.status = AgentStatus::Idle;
                }
                m
            })
            .collect();
    })
    .await
    .unwrap();
    let mut leases = vec![s.acquire_lease("lead").await.unwrap()];
    for i in 0..MEMBERS {
        leases.push(s.acquire_lease(&mate(i)).await.unwrap());
    }
    (s, leases)
}

fn dashboard(ws: &Path, rows: u16) -> Pty {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.current_dir(ws)
        .args(["team", "watch"])
        .env("TERM", "xterm-256color")
        .env("USER", "bench")
        .env_remove("TROUPE_LOG");
    let pty = Pty::spawn(cmd, rows, 220);
    pty.wait_for_text("4 Traffic", LIMIT);
    pty
}

fn event(agent: &str, detail: String) -> Event {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    Event::new(EventKind::MessageSent, Some(agent), detail, now)
}

/// CPU seconds (user + system) the process has used.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf only reads a configuration value.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// A `Vm…:` figure of /proc/<pid>/status, in MiB.
fn vm_mib(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024.0
}

/// Writes `marker` as an event and times until the screen shows it.
async fn marker_latency(s: &SharedStore, dash: &Pty, marker: &str) -> Duration {
    s.record(&event("lead", format!("message → mate-000: {marker}")))
        .await
        .unwrap();
    let written = Instant::now();
    dash.wait_for_text(marker, LIMIT);
    written.elapsed()
}

fn summary(name: &str, samples: &mut [Duration]) -> f64 {
    samples.sort();
    let p99 = ms(quantile(samples, 0.99));
    println!(
        "{name:<34} n={:<5} p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms",
        samples.len(),
        ms(quantile(samples, 0.5)),
        p99,
        ms(*samples.last().unwrap())
    );
    p99
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let markers = arg_value("--markers").unwrap_or(200);
    let load_secs = arg_value("--load-secs").unwrap_or(10) as u64;

    let ws = TempWorkspace::new();
    let (s, _leases) = team(ws.path()).await;
    let mut dash = dashboard(ws.path(), 120);

    // 1. A quiet team: one event at a time, at irregular gaps (so some land right after a frame).
    let mut quiet = Vec::new();
    for i in 0..markers {
        quiet.push(marker_latency(&s, &dash, &format!("quiet-mark-{i:05}")).await);
        std::thread::sleep(Duration::from_millis(3 + (i as u64 * 7) % 23));
    }
    let quiet_p99 = summary("event → screen, quiet team", &mut quiet);

    // 2. 100 teammates, 1,000 events/s and 100 presence updates/s, markers every 50 ms.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (s, stop) = (s.clone(), stop.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            let mut n: u64 = 0;
            while !stop.load(Ordering::SeqCst) {
                let due = start + Duration::from_micros(n * 1_000);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    tokio::time::sleep(wait).await;
                }
                let who = mate(n as usize % MEMBERS);
                let to = mate((n as usize + 1) % MEMBERS);
                s.record(&event(
                    &who,
                    format!("message → {to}: chunk {n} of the work"),
                ))
                .await
                .unwrap();
                if n.is_multiple_of(10) {
                    s.set_doing(&who, Some(&format!("bash(cargo test -p part-{n})")))
                        .await
                        .unwrap();
                }
                n += 1;
            }
            n
        })
    };
    let cpu_before = cpu_secs(dash.pid());
    let load_started = Instant::now();
    let mut loaded = Vec::new();
    let mut i = 0;
    while load_started.elapsed() < Duration::from_secs(load_secs) {
        loaded.push(marker_latency(&s, &dash, &format!("load-mark-{i:05}")).await);
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    let background = writer.await.unwrap();
    let load_wall = load_started.elapsed().as_secs_f64();
    let load_cpu = (cpu_secs(dash.pid()) - cpu_before) / load_wall * 100.0;
    let loaded_p99 = summary("event → screen, 1,000 events/s", &mut loaded);
    // Every event written was read: the dashboard's count catches up with the log.
    let total = s
        .read_events(EventCursor::START)
        .await
        .unwrap()
        .events
        .len();
    let caught_up = Instant::now();
    dash.wait_for_text(&format!(" {total} events seen"), LIMIT);
    let lag = caught_up.elapsed();
    let load_rss = vm_mib(dash.pid(), "VmRSS:");
    let load_hwm = vm_mib(dash.pid(), "VmHWM:");
    println!(
        "under load: {:.0} events/s written for {load_wall:.1} s; dashboard CPU {load_cpu:.1}% of a core; \
         all {total} events read {:.0} ms after the load stopped; RSS {load_rss:.1} MiB (peak {load_hwm:.1} MiB)",
        background as f64 / load_wall,
        ms(lag)
    );

    // 3. An idle team: nothing changes for 10 s.
    let idle_secs = 10.0;
    let before = cpu_secs(dash.pid());
    std::thread::sleep(Duration::from_secs_f64(idle_secs));
    let idle_cpu = (cpu_secs(dash.pid()) - before) / idle_secs * 100.0;
    println!("idle team: dashboard CPU {idle_cpu:.2}% of a core over {idle_secs:.0} s");
    dash.send("q");
    dash.wait_exit(LIMIT);
    drop(s);

    // 4. 100 members and 100,000 events already in the log.
    let big = TempWorkspace::new();
    let (s, _big_leases) = team(big.path()).await;
    for n in 0..100_000u64 {
        let who = mate(n as usize % MEMBERS);
        s.record(&event(
            &who,
            format!("message → lead: report {n} of a long day's work, with some detail"),
        ))
        .await
        .unwrap();
    }
    s.record(&event("lead", "message → mate-000: the-last-event".into()))
        .await
        .unwrap();
    let log_mib = std::fs::metadata(big.path().join(".troupe/teams/default/events.jsonl"))
        .unwrap()
        .len() as f64
        / 1024.0
        / 1024.0;
    let started = Instant::now();
    let mut dash = dashboard(big.path(), 60);
    dash.wait_for_text("the-last-event", LIMIT);
    let start_ms = ms(started.elapsed());
    let hwm = vm_mib(dash.pid(), "VmHWM:");
    println!(
        "100 members, 100,001 events ({log_mib:.1} MiB log): first screen with the last event in {start_ms:.0} ms; \
         peak RSS {hwm:.1} MiB"
    );
    dash.send("q");
    dash.wait_exit(LIMIT);

    println!();
    println!(
        "SUMMARY quiet_p99_ms={quiet_p99:.2} load_p99_ms={loaded_p99:.2} load_cpu_pct={load_cpu:.1} \
         idle_cpu_pct={idle_cpu:.2} rss_100k_mib={hwm:.1} latency={} idle={} memory={}",
        verdict(quiet_p99 < TARGET_P99_MS && loaded_p99 < TARGET_P99_MS),
        verdict(idle_cpu < TARGET_IDLE_CPU_PCT),
        verdict(hwm < TARGET_RSS_MIB),
    );
}
