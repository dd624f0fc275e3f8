//! What a session costs with prompt caching: the real binary against the
//! fake model, which prices Anthropic's prompt caching as documented (`troupe_testkit::cache`),
//! at Sonnet 4.5 list prices ($3/M input, $15/M output, $3.75/M cache writes, $0.30/M reads).
//!
//! - solo: one lead, 30 rounds each reading a 2 KB file, then an answer; once with caching,
//!   once with `DISABLE_PROMPT_CACHING=1`. Targets: ≥ 97 % of input tokens read from cache,
//!   ≤ $0.225. The hit rate is bounded by the session, not by the breakpoints: every round's
//!   new content (≈ 620 tokens here) must be written once, so the rate is at most
//!   1 − written/sent; with troupe's ≈ 5.5k-token prefix that is ≈ 95 %. A larger prompt
//!   raises the rate and the bill together, which is why the dollar target is the one to hold.
//! - team: a lead starting 4 teammates at once, each reading a 2 KB file in each of 5 rounds,
//!   then reporting; the lead answers. Target: ≥ 80 % read from cache overall.
//!
//! Run: `cargo bench -p troupe-cli --bench cache_cost`. Prints one row per session and a
//! SUMMARY line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use serde_json::{json, Value};
use support::{troupe, verdict};
use troupe_protocol::Usage;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

const MODEL: &str = "claude-sonnet-4-5";
const SOLO_ROUNDS: usize = 30;
const TEAMMATES: usize = 4;
const TEAM_ROUNDS: usize = 5;
const TARGET_SOLO_RATE: f64 = 0.97;
const TARGET_SOLO_USD: f64 = 0.225;
const TARGET_TEAM_RATE: f64 = 0.80;

/// Sonnet 4.5 list prices, USD per million tokens.
fn dollars(u: &Usage) -> f64 {
    (u.input_tokens as f64 * 3.0
        + u.output_tokens as f64 * 15.0
        + u.cache_creation_input_tokens as f64 * 3.75
        + u.cache_read_input_tokens as f64 * 0.30)
        / 1e6
}

/// Writes `name` (2 KB of text).
fn two_kb(ws: &TempWorkspace, name: &str) {
    let line = format!("{name}: a line of the file the agent reads, about as wide as code is.\n");
    let text = line.repeat(2_048 / line.len() + 1);
    ws.write(name, &text[..2_048]);
}

/// `rounds` reads of `<prefix><i>.txt` (written here), then `answer`.
fn reading(ws: &TempWorkspace, prefix: &str, rounds: usize, answer: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for i in 0..rounds {
        let name = format!("{prefix}{i}.txt");
        two_kb(ws, &name);
        steps.push(Step::tool("read_file", json!({ "path": name })));
    }
    steps.push(Step::text(answer));
    steps
}

/// One headless run; its json result.
fn run(ws: &TempWorkspace, server: &FakeServer, prompt: &str, caching: bool) -> Value {
    let mut cmd = troupe(ws.path(), server);
    cmd.args(["-p", prompt, "--output-format", "json", "--model", MODEL])
        .args(["--permission-mode", "bypassPermissions"])
        .env_remove("DISABLE_PROMPT_CACHING");
    if !caching {
        cmd.env("DISABLE_PROMPT_CACHING", "1");
    }
    let out = cmd.output().expect("troupe runs");
    assert!(
        out.status.success(),
        "troupe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    serde_json::from_str(last).expect("a json result")
}

fn usage_of(value: &Value) -> Usage {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

fn row(label: &str, calls: usize, u: &Usage) -> (f64, f64) {
    let rate = u.cache_hit_rate().unwrap_or(0.0);
    let usd = dollars(u);
    println!(
        "{label:<34} {calls:>5} {:>9} {:>9} {:>9} {:>7} {:>7.1}% {:>9.4}",
        u.input_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        u.output_tokens,
        rate * 100.0,
        usd
    );
    (rate, usd)
}

fn solo(caching: bool) -> (usize, Usage) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        reading(&ws, "data/f", SOLO_ROUNDS, "read all thirty"),
    );
    let result = run(&ws, &server, "read the files under data/", caching);
    (server.journal().len(), usage_of(&result["usage"]))
}

fn team() -> (usize, Usage, Vec<(String, Usage)>) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let names = ["alice", "bob", "carol", "dave"];
    let mut spawn = Reply::text("Starting the team.");
    for name in names.iter().take(TEAMMATES) {
        spawn = spawn.with_tool(
            "spawn_teammate",
            json!({"name": name, "role": "reader", "prompt": format!("read your files under {name}/")}),
        );
        server.script(
            name,
            reading(
                &ws,
                &format!("{name}/f"),
                TEAM_ROUNDS,
                &format!("{name}: read {TEAM_ROUNDS} files"),
            ),
        );
    }
    server.script("lead", [Step::reply(spawn)]);
    // The lead's later calls (woken by each report) answer briefly.
    server.set_fallback(|_| Step::text("noted"));
    let result = run(&ws, &server, "have the team read the files", true);
    let agents: Vec<(String, Usage)> = result["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            (
                a["name"].as_str().unwrap_or("").to_string(),
                usage_of(&a["usage"]),
            )
        })
        .collect();
    let mut total = Usage::default();
    for (_, u) in &agents {
        total.add(u);
    }
    (server.journal().len(), total, agents)
}

fn main() {
    support::wrapper_main_if_requested();
    println!(
        "prompt caching: cost at Sonnet 4.5 list prices against the caching fake model (real binary)"
    );
    println!(
        "{:<34} {:>5} {:>9} {:>9} {:>9} {:>7} {:>8} {:>9}",
        "session", "calls", "input", "cache rd", "cache wr", "output", "cache", "USD"
    );
    let (calls, cached) = solo(true);
    let (solo_rate, solo_usd) = row("solo 30 rounds, caching on", calls, &cached);
    let (calls, uncached) = solo(false);
    row("solo 30 rounds, caching off", calls, &uncached);
    let (calls, total, agents) = team();
    let (team_rate, team_usd) = row("team lead + 4 × 5 rounds", calls, &total);
    for (name, usage) in &agents {
        row(&format!("  {name}"), 0, usage);
    }
    println!(
        "SUMMARY solo_cache_rate={:.1}% solo_usd={solo_usd:.4} team_cache_rate={:.1}% team_usd={team_usd:.4} \
         solo_rate_target={} solo_cost_target={} team_rate_target={}",
        solo_rate * 100.0,
        team_rate * 100.0,
        verdict(solo_rate >= TARGET_SOLO_RATE),
        verdict(solo_usd <= TARGET_SOLO_USD),
        verdict(team_rate >= TARGET_TEAM_RATE),
    );
}
