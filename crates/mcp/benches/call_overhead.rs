//! What one MCP tool call costs through troupe beyond the server's own time (target
//! < 1 ms on stdio).
//!
//! The same server (the fixture on the official TypeScript SDK, its `echo` tool) is called two
//! ways, in alternating blocks so drift hits both alike:
//! - raw: a minimal client writes the `tools/call` line to the server's stdin and reads the
//!   answer line — the server's own time plus the pipe, the floor any client pays;
//! - troupe: the `mcp__fx__echo` tool's `call`, the path the agent loop takes (the JSON-RPC
//!   session, timeout, result conversion and output budget).
//!
//! The overhead is the difference of the medians. Run:
//! `cargo bench -p troupe-mcp --bench call_overhead [-- --calls 2000]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_mcp::{McpConfig, McpManager, McpOptions};
use troupe_testkit::{mcp, TempWorkspace};
use troupe_tools::{ToolContext, Workspace};

const TARGET_OVERHEAD_MS: f64 = 1.0;
const BLOCKS: usize = 4;

fn arg_value(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// The fixture server with bare pipes and a line-by-line JSON-RPC client.
struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Raw {
    fn start(entry: &Value) -> Raw {
        let mut cmd = Command::new(entry["command"].as_str().unwrap());
        for arg in entry["args"].as_array().unwrap() {
            cmd.arg(arg.as_str().unwrap());
        }
        for (key, value) in entry["env"].as_object().unwrap() {
            cmd.env(key, value.as_str().unwrap());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = Raw {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        raw.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        );
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let calls = arg_value("--calls").unwrap_or(1000).max(50);
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    let entry = mcp::fixture(&log);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut config = McpConfig::new();
    let env = |name: &str| std::env::var(name).ok();
    config
        .add_document(
            "bench",
            &json!({"mcpServers": {"fx": entry.clone()}}).to_string(),
            &env,
        )
        .unwrap();
    let manager = McpManager::new(&config, McpOptions::new(ws.path().to_path_buf()));
    manager.start(runtime.handle());
    runtime.block_on(manager.settle(Duration::from_secs(60)));
    let tools = runtime.block_on(manager.tools());
    let echo = tools
        .iter()
        .find(|t| t.name() == "mcp__fx__echo")
        .expect("the fixture's echo tool")
        .clone();
    let ctx = ToolContext::new(Arc::new(Workspace::new(ws.path()).unwrap()), "bench");
    let mut raw = Raw::start(&entry);

    let per_block = calls / BLOCKS;
    let mut through_troupe = Vec::with_capacity(calls);
    let mut direct = Vec::with_capacity(calls);
    // Warm both paths (JIT in the server, allocations in the client).
    for _ in 0..50 {
        runtime.block_on(echo.call(json!({"text": "warm"}), &ctx));
        raw.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "warm"}}),
        );
    }
    for block in 0..BLOCKS {
        for i in 0..per_block {
            let text = format!("call {block}/{i}");
            let started = Instant::now();
            let answer = raw.request(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": text}}),
            );
            direct.push(started.elapsed());
            assert_eq!(answer["result"]["content"][0]["text"], text);
        }
        runtime.block_on(async {
            for i in 0..per_block {
                let text = format!("call {block}/{i}");
                let started = Instant::now();
                let output = echo.call(json!({"text": text}), &ctx).await;
                through_troupe.push(started.elapsed());
                assert_eq!(output.content, text);
            }
        });
    }
    manager.shutdown();
    through_troupe.sort();
    direct.sort();
    println!(
        "one MCP tool call (fixture echo over stdio), {} calls each",
        direct.len()
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9}",
        "path", "p50 ms", "p90 ms", "p99 ms"
    );
    for (label, samples) in [
        ("raw JSON-RPC over the pipes (floor)", &direct),
        ("troupe: mcp__fx__echo tool call", &through_troupe),
    ] {
        println!(
            "{label:<40} {:>9.3} {:>9.3} {:>9.3}",
            ms(quantile(samples, 0.5)),
            ms(quantile(samples, 0.9)),
            ms(quantile(samples, 0.99))
        );
    }
    let overhead = ms(quantile(&through_troupe, 0.5)) - ms(quantile(&direct, 0.5));
    let overhead_p90 = ms(quantile(&through_troupe, 0.9)) - ms(quantile(&direct, 0.9));
    println!(
        "SUMMARY mcp_call_overhead_p50_ms={overhead:.3} mcp_call_overhead_p90_ms={overhead_p90:.3} target={}",
        if overhead < TARGET_OVERHEAD_MS { "PASS" } else { "MISS" }
    );
}
