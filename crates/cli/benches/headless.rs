//! Headless round trip: `troupe -p "list files"` against the fake model
//! server — one bash round trip, two model calls — run many times; prints median and p90 wall
//! time and peak RSS of the release binary. Targets: median < 50 ms, peak RSS < 20 MiB.
//!
//! Run: `cargo bench -p troupe-cli --bench headless [-- --runs 20]`.
//! A `troupe --version` row gives the floor: process spawn, dynamic loading, exit. A second row
//! runs in `default` mode, where `ls` is allowed as read-only and runs in the read-only sandbox.
//! `-- --serve SECS` only keeps the scripted fake server up, to profile runs by hand.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{arg_value, mib, ms, quantile, run_measured, troupe, verdict, Measured};
use troupe_testkit::{FakeServer, TempWorkspace};

const TARGET_MEDIAN_MS: f64 = 50.0;
const TARGET_RSS_MIB: f64 = 20.0;
const WARMUP: usize = 2;

/// A small workspace like a fresh crate, so `ls` has something to list.
fn workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    ws
}

/// One headless run in a fresh workspace in permission `mode`; checks the result is the
/// expected success. In `default` mode `ls` is allowed as read-only and runs in the read-only
/// sandbox; in `bypassPermissions` it runs unconfined.
fn one_run(server: &FakeServer, mode: &str) -> Result<Measured, String> {
    let ws = workspace();
    let (m, out, err) = support::run_list_files(ws.path(), server, mode)
        .map_err(|e| format!("cannot run troupe: {e}"))?;
    check(&m, &out, &err)?;
    Ok(m)
}

fn check(m: &Measured, out: &Path, err: &Path) -> Result<(), String> {
    let stdout = std::fs::read_to_string(out).unwrap_or_default();
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    if m.code != Some(0) {
        return Err(format!("troupe exited with {:?}; stderr: {stderr}", m.code));
    }
    let result: Value = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("no JSON result on stdout: {stdout}"))?;
    if result["subtype"] != "success" || result["num_turns"] != 2 {
        return Err(format!("unexpected result: {result}"));
    }
    if result["result"] != "files: Cargo.toml,README.md,src" {
        return Err(format!(
            "the bash round trip did not list the files: {result}"
        ));
    }
    Ok(())
}

fn version_run(server: &FakeServer) -> Result<Measured, String> {
    let ws = TempWorkspace::new();
    let m = run_measured(
        troupe(ws.path(), server).arg("--version"),
        &ws.path().join(".out"),
        &ws.path().join(".err"),
    )
    .map_err(|e| format!("cannot run troupe: {e}"))?;
    if m.code != Some(0) {
        return Err(format!("troupe --version exited with {:?}", m.code));
    }
    Ok(m)
}

struct Summary {
    median: Duration,
    p90: Duration,
    max: Duration,
    rss_median_kib: u64,
    rss_max_kib: u64,
}

fn summarize(runs: &[Measured]) -> Summary {
    let mut walls: Vec<Duration> = runs.iter().map(|m| m.wall).collect();
    walls.sort();
    let mut rss: Vec<u64> = runs.iter().map(|m| m.max_rss_kib).collect();
    rss.sort();
    Summary {
        median: quantile(&walls, 0.5),
        p90: quantile(&walls, 0.9),
        max: quantile(&walls, 1.0),
        rss_median_kib: quantile(&rss, 0.5),
        rss_max_kib: quantile(&rss, 1.0),
    }
}

fn row(label: &str, n: usize, s: &Summary) {
    println!(
        "{label:<34} {n:>5} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>10.1}",
        ms(s.median),
        ms(s.p90),
        ms(s.max),
        mib(s.rss_median_kib),
        mib(s.rss_max_kib)
    );
}

fn main() -> Result<(), String> {
    support::wrapper_main_if_requested();
    let runs = arg_value("--runs").unwrap_or(20).max(5);
    let server = FakeServer::start();
    support::script_ls(&server);
    if let Some(secs) = arg_value("--serve") {
        // For profiling by hand (strace, perf): keep the scripted server up and say where.
        println!("ANTHROPIC_BASE_URL={} (serving for {secs} s)", server.url());
        std::thread::sleep(Duration::from_secs(secs as u64));
        return Ok(());
    }

    for _ in 0..WARMUP {
        one_run(&server, "bypassPermissions")?;
    }
    let before = server.journal().len();
    let mut measured = Vec::with_capacity(runs);
    for _ in 0..runs {
        measured.push(one_run(&server, "bypassPermissions")?);
    }
    let calls = server.journal().len() - before;
    if calls != 2 * runs {
        return Err(format!("expected {} model calls, saw {calls}", 2 * runs));
    }
    let mut sandboxed = Vec::with_capacity(runs);
    for _ in 0..runs {
        sandboxed.push(one_run(&server, "default")?);
    }
    let mut floor = Vec::with_capacity(runs);
    for _ in 0..runs {
        floor.push(version_run(&server)?);
    }

    let s = summarize(&measured);
    println!(
        "headless round trip: troupe -p \"list files\" (bash ls + 2 model calls, fake server)"
    );
    println!(
        "{:<34} {:>5} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "run", "n", "p50 ms", "p90 ms", "max ms", "rss p50 MiB", "rss max MiB"
    );
    row("troupe -p \"list files\"", runs, &s);
    row(
        "  same, default mode (sandboxed ls)",
        runs,
        &summarize(&sandboxed),
    );
    row("troupe --version (floor)", runs, &summarize(&floor));
    let time_ok = ms(s.median) < TARGET_MEDIAN_MS;
    let rss_ok = mib(s.rss_max_kib) < TARGET_RSS_MIB;
    println!(
        "SUMMARY headless_median_ms={:.1} headless_p90_ms={:.1} headless_peak_rss_mib={:.1} \
         time_target={} rss_target={}",
        ms(s.median),
        ms(s.p90),
        mib(s.rss_max_kib),
        verdict(time_ok),
        verdict(rss_ok)
    );
    Ok(())
}
