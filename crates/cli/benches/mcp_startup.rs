//! The headless two-call loop with three configured MCP servers against the same loop without
//! them (target: within 2 ms, since start-up waits for none of them).
//!
//! Each run is `troupe -p "list files"` (one bash round trip, two model calls, fake model server)
//! in a fresh workspace; the MCP runs also have a `.mcp.json` with server-everything and
//! server-filesystem (node) and mcp-server-time (python), which troupe starts in the
//! background and ends when the run does. The two kinds alternate run by run, so drift hits both
//! alike. Run: `cargo bench -p troupe-cli --bench mcp_startup [-- --runs 30]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::{arg_value, mib, ms, quantile, verdict, Measured};
use troupe_testkit::{mcp, FakeServer, TempWorkspace};

const TARGET_DELTA_MS: f64 = 2.0;

fn one_run(server: &FakeServer, servers: Option<&Value>) -> Measured {
    let ws = TempWorkspace::new();
    ws.write("src/main.rs", "fn main() {}\n");
    if let Some(servers) = servers {
        mcp::write_mcp_json(ws.path(), servers.clone());
    }
    let (m, out, err) = support::run_list_files(ws.path(), server, "bypassPermissions").unwrap();
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let result: Value = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no result: {stdout} {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            )
        });
    assert_eq!(m.code, Some(0), "{result}");
    assert_eq!(result["num_turns"], 2, "{result}");
    if servers.is_some() {
        // The servers were started (their logs exist) and did not hold the run up.
        assert!(ws.path().join(".troupe/logs/mcp/everything.log").exists());
    }
    m
}

fn main() {
    support::wrapper_main_if_requested();
    let runs = arg_value("--runs").unwrap_or(20).max(5);
    let server = FakeServer::start();
    support::script_ls(&server);
    let root = std::env::temp_dir();
    let servers = json!({
        "everything": mcp::everything(),
        "files": mcp::filesystem(&root),
        "time": mcp::time(),
    });
    // Three servers that never answer and use no CPU: what troupe itself adds (spawning them,
    // the tool source, ending them), without the servers' own start-up competing for the CPU.
    let idle = json!({
        "everything": {"command": "sleep", "args": ["600"]},
        "files": {"command": "sleep", "args": ["600"]},
        "time": {"command": "sleep", "args": ["600"]},
    });
    for _ in 0..2 {
        one_run(&server, None);
        one_run(&server, Some(&idle));
        one_run(&server, Some(&servers));
    }
    let (mut plain, mut with_idle, mut with_mcp) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        plain.push(one_run(&server, None));
        with_idle.push(one_run(&server, Some(&idle)));
        with_mcp.push(one_run(&server, Some(&servers)));
    }
    let stats = |runs: &[Measured]| {
        let mut walls: Vec<Duration> = runs.iter().map(|m| m.wall).collect();
        walls.sort();
        let mut rss: Vec<u64> = runs.iter().map(|m| m.max_rss_kib).collect();
        rss.sort();
        (
            quantile(&walls, 0.5),
            quantile(&walls, 0.9),
            quantile(&rss, 1.0),
        )
    };
    let (plain_p50, plain_p90, plain_rss) = stats(&plain);
    let (idle_p50, idle_p90, idle_rss) = stats(&with_idle);
    let (mcp_p50, mcp_p90, mcp_rss) = stats(&with_mcp);
    println!("headless two-call loop, with and without three MCP servers configured ({runs} runs each, alternating)");
    println!(
        "{:<44} {:>9} {:>9} {:>12}",
        "run", "p50 ms", "p90 ms", "rss max MiB"
    );
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>12.1}",
        "no MCP servers",
        ms(plain_p50),
        ms(plain_p90),
        mib(plain_rss)
    );
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>12.1}",
        "three idle stdio servers (sleep) configured",
        ms(idle_p50),
        ms(idle_p90),
        mib(idle_rss)
    );
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>12.1}",
        "everything + filesystem + time configured",
        ms(mcp_p50),
        ms(mcp_p90),
        mib(mcp_rss)
    );
    let idle_delta = ms(idle_p50) - ms(plain_p50);
    let delta = ms(mcp_p50) - ms(plain_p50);
    println!(
        "SUMMARY mcp_loop_idle_delta_p50_ms={idle_delta:.2} mcp_loop_delta_p50_ms={delta:.2} mcp_loop_p50_ms={:.1} plain_loop_p50_ms={:.1} target={}",
        ms(mcp_p50),
        ms(plain_p50),
        verdict(delta < TARGET_DELTA_MS)
    );
}
