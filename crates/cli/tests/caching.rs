//! Prompt caching through the binary against the fake model, which prices
//! Anthropic's caching as documented (`troupe_testkit::cache`): a session's rounds read their
//! prefix from cache; the bytes before the first breakpoint stay identical across rounds,
//! `--continue` and a compaction; never more than four breakpoints; a tool list that changes
//! mid-session; `DISABLE_PROMPT_CACHING=1` and the setting send no `cache_control`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{result_json, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Recorded, Step, TempWorkspace, Wire};

const SUMMARY_SYSTEM_START: &str = "You summarize the work of a coding agent";

fn is_summary(req: &Recorded) -> bool {
    req.system().starts_with(SUMMARY_SYSTEM_START)
}

/// Writes `data/f<i>.txt`, 2 KB each.
fn write_files(ws: &TempWorkspace, count: usize) {
    std::fs::create_dir_all(ws.path().join("data")).unwrap();
    for i in 0..count {
        let line = format!("line {i} of a file the agent reads, padded to a realistic width.\n");
        let text = line.repeat(2_048 / line.len() + 1);
        std::fs::write(ws.path().join(format!("data/f{i}.txt")), &text[..2_048]).unwrap();
    }
}

/// `rounds` lead steps reading `data/f<i>.txt` (written here), then an answer.
fn reading_session(ws: &TempWorkspace, server: &FakeServer, rounds: usize, answer: &str) {
    write_files(ws, rounds);
    let mut steps = Vec::new();
    for i in 0..rounds {
        steps.push(Step::tool(
            "read_file",
            json!({"path": format!("data/f{i}.txt")}),
        ));
    }
    steps.push(Step::text(answer));
    server.script("lead", steps);
}

fn headless(ws: &TempWorkspace, server: &FakeServer, prompt: &str, extra: &[&str]) -> Value {
    let out = run(troupe(ws.path(), server, Wire::Anthropic)
        .args([
            "-p",
            prompt,
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .args(extra));
    assert!(out.status.success(), "{}", stderr(&out));
    result_json(&out)
}

/// The requests of the lead's own loop (not its summarizing calls).
fn loop_requests(server: &FakeServer) -> Vec<Recorded> {
    server
        .requests_for("lead")
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect()
}

#[test]
fn a_session_reads_its_prefix_from_cache_and_the_prefix_never_changes() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    reading_session(&ws, &server, 6, "read them all");
    let result = headless(&ws, &server, "read the files in data/", &[]);
    assert_eq!(result["result"], "read them all");

    let requests = loop_requests(&server);
    assert_eq!(requests.len(), 7);
    let first = requests[0].cached_prefix().expect("a breakpoint");
    for (i, req) in requests.iter().enumerate() {
        let marks = req.breakpoints();
        assert!((2..=4).contains(&marks), "request {i}: {marks} breakpoints");
        assert_eq!(
            req.cached_prefix().as_deref(),
            Some(first.as_str()),
            "request {i}'s prefix changed"
        );
        // The newest message's last block carries the rolling breakpoint.
        let last = &req.body["messages"].as_array().unwrap().last().unwrap()["content"];
        let last = last.as_array().unwrap().last().unwrap();
        assert_eq!(
            last["cache_control"],
            json!({"type": "ephemeral"}),
            "request {i}"
        );
    }
    // Nothing volatile before the breakpoint: the shared prefix names no date and no agent.
    assert!(!first.contains("Date:"), "{first}");

    // The usage the fake priced: the first round writes, every later one reads what came
    // before it and writes only its new round.
    let usage = &result["usage"];
    let read = usage["cache_read_input_tokens"].as_u64().unwrap();
    let written = usage["cache_creation_input_tokens"].as_u64().unwrap();
    let input = usage["input_tokens"].as_u64().unwrap();
    assert!(written > 0, "{usage}");
    let rate = read as f64 / (read + written + input) as f64;
    assert!(rate > 0.8, "cache read rate {rate:.2}: {usage}");
    assert!((result["cache_hit_rate"].as_f64().unwrap() - rate).abs() < 1e-9);
    assert!((result["agents"][0]["cache_hit_rate"].as_f64().unwrap() - rate).abs() < 1e-9);
    // Every request after the first read at least the prefix.
    let prefix_tokens = (first.len() as u64).div_ceil(4);
    assert!(read >= 6 * prefix_tokens, "{read} < 6 × {prefix_tokens}");
}

#[test]
fn the_prefix_survives_continue_and_a_compaction() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    write_files(&ws, 1);
    server.script(
        "lead",
        [
            Step::tool("read_file", json!({"path": "data/f0.txt"})),
            Step::tool("compact", json!({"focus": "the files"})),
            Step::text("SUMMARY: one file read"),
            Step::text("first run done"),
        ],
    );
    let first = headless(&ws, &server, "read a file", &[]);
    assert_eq!(first["result"], "first run done");
    server.script("lead", [Step::text("continued")]);
    let second = headless(&ws, &server, "what next?", &["--continue"]);
    assert_eq!(second["result"], "continued");

    let requests = loop_requests(&server);
    assert!(requests.len() >= 4, "{}", requests.len());
    let prefix = requests[0].cached_prefix().expect("a breakpoint");
    for (i, req) in requests.iter().enumerate() {
        assert_eq!(
            req.cached_prefix().as_deref(),
            Some(prefix.as_str()),
            "request {i} (after the compaction or the --continue) changed the prefix"
        );
    }
    // The resumed session read the prefix its first run wrote.
    let read = second["usage"]["cache_read_input_tokens"].as_u64().unwrap();
    assert!(read >= (prefix.len() as u64).div_ceil(4), "{second}");
}

#[test]
fn caching_off_sends_no_cache_control() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    reading_session(&ws, &server, 2, "done");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("DISABLE_PROMPT_CACHING", "1")
        .args(["-p", "read", "--output-format", "json"])
        .args(["--permission-mode", "bypassPermissions"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let usage = &result_json(&out)["usage"];
    assert_eq!(usage["cache_read_input_tokens"], 0, "{usage}");
    assert_eq!(usage["cache_creation_input_tokens"], 0, "{usage}");

    // The same through the setting.
    std::fs::create_dir_all(ws.path().join(".claude")).unwrap();
    std::fs::write(
        ws.path().join(".claude/settings.json"),
        r#"{"promptCaching": {"enabled": false}}"#,
    )
    .unwrap();
    reading_session(&ws, &server, 1, "done again");
    let result = headless(&ws, &server, "read", &[]);
    assert_eq!(result["result"], "done again");
    for req in server.journal() {
        assert_eq!(req.breakpoints(), 0);
        let body = req.body.to_string();
        assert!(!body.contains("cache_control"), "{body}");
        assert!(req.body["system"].is_string());
    }

    // A TTL of an hour marks every breakpoint with it.
    std::fs::write(
        ws.path().join(".claude/settings.json"),
        r#"{"promptCaching": {"ttl": "1h"}}"#,
    )
    .unwrap();
    reading_session(&ws, &server, 1, "an hour");
    headless(&ws, &server, "read", &[]);
    let last = server.journal().pop().unwrap();
    assert!(last.breakpoints() > 0);
    assert!(last.body.to_string().contains(r#""ttl":"1h""#));
    assert_eq!(
        last.header("anthropic-beta"),
        Some("extended-cache-ttl-2025-04-11")
    );
}

#[test]
fn a_tool_list_that_changes_mid_session_changes_the_prefix_once_per_change() {
    let ws = TempWorkspace::new();
    write_files(&ws, 1);
    let log = ws.path().join("fixture.log");
    troupe_testkit::mcp::write_mcp_json(
        ws.path(),
        json!({"fx": troupe_testkit::mcp::fixture(&log)}),
    );
    let server = common::lead_server([
        Step::tool("connect_mcp", json!({"name": "fx"})),
        Step::tool("read_file", json!({"path": "data/f0.txt"})),
        Step::tool("mcp__fx__add_tool", json!({"name": "fresh"})),
        Step::tool("read_file", json!({"path": "data/f0.txt"})),
        Step::text("done"),
    ]);
    headless(
        &ws,
        &server,
        "connect and read",
        &["--allowedTools", "mcp__fx"],
    );

    let requests = loop_requests(&server);
    assert_eq!(requests.len(), 5);
    let lists: Vec<Vec<String>> = requests.iter().map(Recorded::tool_names).collect();
    let prefixes: Vec<String> = requests
        .iter()
        .map(|r| r.cached_prefix().expect("a breakpoint"))
        .collect();
    let mut changes = 0;
    for i in 1..requests.len() {
        let list_changed = lists[i] != lists[i - 1];
        changes += usize::from(list_changed);
        assert_eq!(
            prefixes[i] != prefixes[i - 1],
            list_changed,
            "request {i}: the prefix changes exactly when the tools do"
        );
    }
    // `-p` waits for the server before its first call; then the server adds a tool.
    assert!(lists[0].iter().any(|t| t == "mcp__fx__echo"), "{lists:?}");
    assert_eq!(changes, 1, "the server added a tool: {lists:?}");
    // Built-ins first, then the server's tools sorted by name.
    let last = lists.last().unwrap();
    let first_mcp = last.iter().position(|t| t.starts_with("mcp__")).unwrap();
    assert!(
        last[first_mcp..].iter().all(|t| t.starts_with("mcp__")),
        "{last:?}"
    );
    let mut sorted = last[first_mcp..].to_vec();
    sorted.sort();
    assert_eq!(last[first_mcp..], sorted[..], "{last:?}");
    assert!(last.contains(&"mcp__fx__fresh".to_string()));
}

#[test]
fn a_team_started_at_once_writes_its_shared_prefix_once() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let names = ["alice", "bob", "carol", "dave"];
    let mut spawn = troupe_testkit::Reply::text("Starting the team.");
    for name in names {
        spawn = spawn.with_tool(
            "spawn_teammate",
            json!({"name": name, "role": "reader", "prompt": format!("read {name}/f0.txt")}),
        );
        ws.write(format!("{name}/f0.txt"), "x".repeat(2_048));
        server.script(
            name,
            [
                // Each first answer takes a while to begin, so the four first requests overlap.
                Step::delay(
                    std::time::Duration::from_millis(300),
                    Step::tool("read_file", json!({"path": format!("{name}/f0.txt")})),
                ),
                Step::text(&format!("{name}: done")),
            ],
        );
    }
    server.script("lead", [Step::reply(spawn)]);
    server.set_fallback(|_| Step::text("noted"));
    let result = headless(&ws, &server, "have the team read", &[]);

    // Every teammate's first request starts with the same shared prefix.
    let firsts: Vec<Recorded> = names
        .iter()
        .map(|n| server.requests_for(n).first().cloned().expect("a request"))
        .collect();
    let shared = firsts[0].cached_prefix().expect("a breakpoint");
    for first in &firsts {
        assert_eq!(first.cached_prefix().as_deref(), Some(shared.as_str()));
    }
    let shared_tokens = (shared.len() as u64).div_ceil(4);
    let usage = |name: &str| {
        result["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .map(|a| a["usage"].clone())
            .unwrap()
    };
    let writers: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| usage(n)["cache_creation_input_tokens"].as_u64().unwrap() >= shared_tokens)
        .collect();
    assert!(
        writers.len() <= 1,
        "{writers:?} all wrote the shared prefix: {result}"
    );
    for name in names.iter().filter(|n| !writers.contains(n)) {
        let read = usage(name)["cache_read_input_tokens"].as_u64().unwrap();
        assert!(
            read >= shared_tokens,
            "{name} read {read} < {shared_tokens}"
        );
    }
}
