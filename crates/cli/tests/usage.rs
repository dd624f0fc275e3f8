//! Token and cost accounting per agent through the binary: a teammate's
//! tokens reach the roster after each of its model replies, not only when its work phase ends;
//! `troupe team status` and the json result show every agent with its cost.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, result_json, stderr, subcommand};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use troupe_testkit::{Reply, Step, TempWorkspace};

/// `troupe team status --json`, parsed.
fn status(ws: &std::path::Path) -> Value {
    let out = subcommand(ws, &["team", "status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn member<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status["members"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

#[tokio::test]
async fn a_teammates_tokens_show_after_each_reply_and_every_agent_is_priced() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::reply(
            Reply::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "tester", "prompt": "check"}),
            )
            .usage(300, 20),
        ),
        Step::reply(Reply::text("spawned").usage(400, 5)),
        Step::reply(Reply::text("alice reported").usage(500, 5)),
    ]);
    // Alice's second request waits (bounded) until the status from another terminal shows
    // the tokens of her first reply, and keeps what it saw.
    let seen: Arc<Mutex<Option<Value>>> = Arc::default();
    let (dir, keep) = (ws.path().to_path_buf(), seen.clone());
    server.script(
        "alice",
        [
            Step::reply(Reply::tool("bash", json!({"command": "true"})).usage(1_000, 10)),
            Step::dynamic(move |_| {
                let deadline = Instant::now() + Duration::from_secs(20);
                loop {
                    let now = status(&dir);
                    let tokens = member(&now, "alice").map(|m| m["usage"]["input_tokens"].clone());
                    if tokens == Some(json!(1_000)) || Instant::now() > deadline {
                        *keep.lock().unwrap() = Some(now);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Reply::text("all good").usage(2_000, 30)
            }),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "have alice check", &[]);
    assert!(out.status.success(), "{}", stderr(&out));

    let mid = seen
        .lock()
        .unwrap()
        .clone()
        .expect("alice's second request came");
    let alice = member(&mid, "alice").unwrap();
    assert_eq!(
        alice["status"], "working",
        "seen while her phase still ran: {mid}"
    );
    assert_eq!(alice["usage"]["input_tokens"], 1_000, "{mid}");
    assert_eq!(alice["usage"]["output_tokens"], 10, "{mid}");
    // The lead's own second call may or may not have come back by then.
    let lead_in = &mid["lead_usage"]["usage"]["input_tokens"];
    assert!(*lead_in == json!(300) || *lead_in == json!(700), "{mid}");
    assert!(mid["lead_usage"]["model"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));

    let result = result_json(&out);
    let agents = result["agents"].as_array().unwrap();
    assert_eq!(agents[0]["name"], "lead");
    assert_eq!(agents[0]["usage"]["input_tokens"], 1_200);
    assert_eq!(agents[1]["name"], "alice");
    assert_eq!(agents[1]["usage"]["input_tokens"], 3_000);
    assert!(agents[0]["cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    assert_eq!(result["usage"]["input_tokens"], 4_200);
    let sum: f64 = agents.iter().map(|a| a["cost_usd"].as_f64().unwrap()).sum();
    assert!((result["total_cost_usd"].as_f64().unwrap() - sum).abs() < 1e-9);

    // Afterwards, from another terminal: the table has a row per agent and a total.
    let table = subcommand(ws.path(), &["team", "status"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("AGENT") && text.contains("COST"), "{text}");
    // The roster table has a lead row too; the cost table's rows carry the token counts.
    let row_with = |name: &str, figure: &str| {
        text.lines()
            .any(|l| l.starts_with(name) && l.contains(figure))
    };
    assert!(row_with("lead", "1200"), "{text}");
    assert!(row_with("total", "4200"), "{text}");
    // Idle and status changes cost the lead nothing: three lead calls, all scripted.
    assert_eq!(server.requests_for("lead").len(), 3);

    // Alice runs on the team's default model: she is priced in every roster view.
    let after = status(ws.path());
    let alice = member(&after, "alice").unwrap();
    let sonnet = (3_000.0 * 3.0 + 40.0 * 15.0) / 1_000_000.0;
    let cost = alice["cost_usd"]
        .as_f64()
        .unwrap_or_else(|| panic!("{after}"));
    assert!((cost - sonnet).abs() < 1e-9, "{after}");
    assert_eq!(
        alice["usage_by_model"]["claude-sonnet-4-5"]["input_tokens"],
        3_000
    );
    let roster_row = text
        .lines()
        .find(|l| l.starts_with("alice") && l.contains("tester"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(roster_row.contains("<$0.01"), "{roster_row}");
}

/// The total `/cost` prints (`≈ $18.0000`).
fn cost_line(stdout: &str, nth: usize) -> f64 {
    let line = stdout
        .lines()
        .filter(|l| l.starts_with("tokens"))
        .nth(nth)
        .unwrap_or_else(|| panic!("no /cost line {nth}: {stdout}"));
    line.rsplit('$').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_model_switch_prices_only_the_calls_after_it() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::reply(Reply::text("on sonnet").usage(1_000_000, 0)),
        Step::reply(Reply::text("on opus").usage(1_000_000, 0)),
    ]);
    let out = common::repl(
        ws.path(),
        &server,
        &["--model", "claude-sonnet-4-5"],
        "first\n/cost\n/model claude-opus-4-1\n/cost\nsecond\n/cost\n/team\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A million tokens at Sonnet's $3; the switch re-prices nothing; a million at Opus's $15.
    assert!((cost_line(&stdout, 0) - 3.0).abs() < 1e-9, "{stdout}");
    assert!((cost_line(&stdout, 1) - 3.0).abs() < 1e-9, "{stdout}");
    assert!((cost_line(&stdout, 2) - 18.0).abs() < 1e-9, "{stdout}");
    // The cost table names both models on the lead's row.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("lead") && l.contains("claude-opus-4-1 + claude-sonnet-4-5")),
        "{stdout}"
    );
}
