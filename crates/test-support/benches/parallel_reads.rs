//! Read-only calls side by side: one response asking for five read-only
//! bash calls of 200 ms each (`sleep 0.2`, which the shell analysis calls read-only) completes
//! its tool phase — from the first call starting to the round's results — in under 500 ms
//! (one after another it takes over 1 s). A response of five `read_file` calls shows the cost
//! of the scheduling itself.
//!
//! The agent is built through the one `AgentBuilder` against the fake model server; bash runs
//! for real. Run: `cargo bench --profile dev -p troupe-test-support --bench parallel_reads
//! [-- --runs 10]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use serde_json::json;
use std::time::{Duration, Instant};
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::AgentEvent;
use troupe_test_support::builder;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

const CALLS: usize = 5;
const TARGET_MS: f64 = 500.0;

/// The tool phase of one turn whose single response asks for `call` `CALLS` times.
async fn tool_phase(ws: &TempWorkspace, tool: &str, input: serde_json::Value) -> Duration {
    let server = FakeServer::start();
    let reply = (0..CALLS).fold(Reply::default(), |reply, _| {
        reply.with_tool(tool, input.clone())
    });
    server.script("bench", [Step::reply(reply), Step::text("done")]);
    let policy = Policy::new(PermissionMode::BypassPermissions, Rules::default());
    let mut agent = builder(ws.path(), &server, "bench")
        .policy(policy)
        .build()
        .unwrap();
    let mut started: Option<Instant> = None;
    let mut phase: Option<Duration> = None;
    let mut errors = Vec::new();
    let mut observe = |event: AgentEvent<'_>| match event {
        AgentEvent::ToolStarted { .. } if started.is_none() => started = Some(Instant::now()),
        AgentEvent::ToolFinished {
            is_error: true,
            content,
            ..
        } => errors.push(content.to_string()),
        AgentEvent::ToolResults(_) => phase = started.map(|s| s.elapsed()),
        _ => {}
    };
    agent
        .run_turn(Some("go".into()), &mut observe)
        .await
        .unwrap();
    assert!(errors.is_empty(), "calls failed: {errors:?}");
    phase.unwrap()
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[at].as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ws = TempWorkspace::new();
    ws.write("a.txt", "some text\n".repeat(100));
    let cases = [
        (
            "5 × bash `sleep 0.2`",
            "bash",
            json!({"command": "sleep 0.2"}),
        ),
        ("5 × read_file", "read_file", json!({"path": "a.txt"})),
    ];
    let mut passed = true;
    for (label, tool, input) in cases {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| runtime.block_on(tool_phase(&ws, tool, input.clone())))
            .collect();
        times.sort();
        let (median, p90) = (quantile(&times, 0.5), quantile(&times, 0.9));
        println!("{label}: tool phase median {median:.1} ms, p90 {p90:.1} ms ({runs} runs)");
        if tool == "bash" {
            let ok = p90 < TARGET_MS;
            passed &= ok;
            println!(
                "  target < {TARGET_MS} ms: {}",
                if ok { "met" } else { "MISSED" }
            );
        }
    }
    if !passed {
        std::process::exit(1);
    }
}
