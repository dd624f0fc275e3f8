//! 100 teammates in one process: the lead spawns N in-process teammates in
//! one response; each does one tool round (`bash ls` or `glob`, alternating) then reports with
//! a final text; the headless run ends when the team has settled. Prints the troupe process's
//! peak RSS (target < 100 MiB), wall time and CPU time (user + system, bash children included).
//!
//! Run: `cargo bench -p troupe-cli --bench team_rss [-- --teammates 100 --runs 3]`.
//! `-- --serve SECS` only keeps the scripted fake server up, to profile a run by hand.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use support::{arg_value, mib, ms, quantile, run_measured, troupe, verdict, Measured};
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace};

const TARGET_RSS_MIB: f64 = 100.0;
const LEAD: &str = "lead";

fn mate_name(i: usize) -> String {
    format!("mate-{i:03}")
}

/// The lead's first call spawns every teammate at once; any later call (after the spawn
/// results, or woken by the teammates' reports) just acknowledges.
fn lead_step(req: &Recorded, teammates: usize) -> Step {
    if req.messages().len() > 1 {
        return Step::text("all teammates reported");
    }
    let mut reply = Reply::default();
    for i in 0..teammates {
        reply = reply.with_tool(
            "spawn_teammate",
            json!({
                "name": mate_name(i),
                "role": "worker",
                "prompt": "List the files in the workspace, then report what you found.",
            }),
        );
    }
    Step::reply(reply)
}

/// A teammate's first call runs one tool (`bash ls` for even names, `glob` for odd ones); the
/// call after the tool result reports.
fn mate_step(req: &Recorded) -> Step {
    if let Some((output, _)) = req.last_tool_result() {
        let lines = output.lines().filter(|l| !l.trim().is_empty()).count();
        return Step::text(&format!("{}: saw {lines} lines of output", req.agent));
    }
    let even = req
        .agent
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n % 2 == 0);
    if even {
        Step::tool("bash", json!({"command": "ls"}))
    } else {
        Step::tool("glob", json!({"pattern": "**/*"}))
    }
}

fn workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    ws.write("src/lib.rs", "pub fn f() {}\n");
    ws
}

/// What one run did besides its cost.
struct RunInfo {
    lead_calls: usize,
    mate_calls: usize,
}

/// A fake server scripted for a team of `teammates`.
fn server(teammates: usize) -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(move |req| {
        if req.agent == LEAD {
            lead_step(req, teammates)
        } else {
            mate_step(req)
        }
    });
    server
}

fn one_run(teammates: usize, timeout_s: u64) -> Result<(Measured, RunInfo), String> {
    let server = server(teammates);
    let ws = workspace();
    let out = ws.path().join(".out");
    let err = ws.path().join(".err");
    let timeout = timeout_s.to_string();
    let m = run_measured(
        troupe(ws.path(), &server).args([
            "-p",
            "spawn the team",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
            "--team-timeout",
            &timeout,
        ]),
        &out,
        &err,
    )
    .map_err(|e| format!("cannot run troupe: {e}"))?;
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    if m.code != Some(0) {
        return Err(format!(
            "troupe exited with {:?}\nstdout: {stdout}\nstderr: {stderr}",
            m.code
        ));
    }
    let result: Value = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("no JSON result on stdout: {stdout}"))?;
    check(&result, teammates)?;
    let journal = server.journal();
    let lead_calls = journal.iter().filter(|r| r.agent == LEAD).count();
    let mate_calls = journal.len() - lead_calls;
    let callers: HashSet<&str> = journal
        .iter()
        .filter(|r| r.agent != LEAD)
        .map(|r| r.agent.as_str())
        .collect();
    if callers.len() != teammates || mate_calls != 2 * teammates {
        return Err(format!(
            "expected {teammates} teammates making 2 calls each; saw {} teammates, {mate_calls} calls",
            callers.len()
        ));
    }
    Ok((
        m,
        RunInfo {
            lead_calls,
            mate_calls,
        },
    ))
}

/// Every teammate must be on the result's roster, idle, with its report.
fn check(result: &Value, teammates: usize) -> Result<(), String> {
    if result["subtype"] != "success" {
        return Err(format!("run failed: {}", result["result"]));
    }
    let members = result["teammates"].as_array().cloned().unwrap_or_default();
    let reported = members
        .iter()
        .filter(|m| {
            m["status"] == "idle" && m["last_report"].as_str().is_some_and(|r| r.contains("saw"))
        })
        .count();
    if members.len() != teammates || reported != teammates {
        return Err(format!(
            "expected {teammates} idle teammates with reports; got {} members, {reported} reported: {}",
            members.len(),
            serde_json::to_string(&members).unwrap_or_default()
        ));
    }
    Ok(())
}

fn main() -> Result<(), String> {
    support::wrapper_main_if_requested();
    let teammates = arg_value("--teammates").unwrap_or(100).max(1);
    let runs = arg_value("--runs").unwrap_or(3).max(1);
    let timeout_s = arg_value("--timeout").unwrap_or(180) as u64;
    if let Some(secs) = arg_value("--serve") {
        // For profiling by hand (strace, perf): keep the scripted server up and say where.
        let server = server(teammates);
        println!("ANTHROPIC_BASE_URL={} (serving for {secs} s)", server.url());
        std::thread::sleep(Duration::from_secs(secs as u64));
        return Ok(());
    }
    println!(
        "team: lead spawns {teammates} in-process teammates, one tool round each (fake server)"
    );
    println!(
        "{:<6} {:>10} {:>10} {:>10} {:>11} {:>11}",
        "run", "wall ms", "cpu ms", "rss MiB", "lead calls", "mate calls"
    );
    let mut all = Vec::with_capacity(runs);
    for i in 0..runs {
        let (m, info) = one_run(teammates, timeout_s)?;
        println!(
            "{:<6} {:>10.1} {:>10.1} {:>10.1} {:>11} {:>11}",
            i + 1,
            ms(m.wall),
            ms(m.cpu),
            mib(m.max_rss_kib),
            info.lead_calls,
            info.mate_calls
        );
        all.push(m);
    }
    let mut walls: Vec<Duration> = all.iter().map(|m| m.wall).collect();
    walls.sort();
    let mut cpus: Vec<Duration> = all.iter().map(|m| m.cpu).collect();
    cpus.sort();
    let peak = all.iter().map(|m| m.max_rss_kib).max().unwrap_or(0);
    println!(
        "SUMMARY team_teammates={teammates} team_wall_median_ms={:.1} team_cpu_median_ms={:.1} team_peak_rss_mib={:.1} rss_target={}",
        ms(quantile(&walls, 0.5)),
        ms(quantile(&cpus, 0.5)),
        mib(peak),
        verdict(mib(peak) < TARGET_RSS_MIB)
    );
    Ok(())
}
