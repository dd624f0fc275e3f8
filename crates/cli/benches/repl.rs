//! The REPL's figures, measured on the release `troupe` in a real
//! pseudo-terminal whose output is parsed by a terminal emulator:
//!
//! - start-up: from spawning the REPL to its prompt on screen, p50/p99 over fresh workspaces
//!   (target < 20 ms);
//! - keystroke to echo: from a key written to the terminal to it shown in the prompt row, while
//!   a teammate works flat out (a read_file call per model reply, each printed above the
//!   prompt as `[alice] ⏺ read_file(…)`), p50/p99/max (target p99 < 16 ms, one frame).
//!
//! Run: `cargo bench -p troupe-cli --bench repl [-- --starts 20 --keys 200]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

#[path = "../tests/pty_support/mod.rs"]
mod pty_support;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use pty_support::Pty;
use support::{arg_value, ms, quantile, verdict};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

const LIMIT: Duration = Duration::from_secs(60);
const TARGET_START_MS: f64 = 20.0;
const TARGET_ECHO_MS: f64 = 16.0;

/// The prompt row as shown, if the prompt is on screen.
fn prompt_row(screen: &str) -> Option<&str> {
    screen
        .lines()
        .rfind(|l| l.starts_with("> ") || *l == ">")
        .map(str::trim_end)
}

fn repl(ws: &Path, server: &FakeServer) -> Pty {
    let mut cmd = support::troupe(ws, server);
    cmd.env("TERM", "xterm-256color");
    Pty::spawn(cmd, 40, 120)
}

/// Spawn to prompt, `n` times, each in a fresh workspace.
fn start_up(server: &FakeServer, n: usize) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..n {
        let ws = TempWorkspace::new();
        let started = Instant::now();
        let mut pty = repl(ws.path(), server);
        pty.wait_for("the prompt", LIMIT, |s| prompt_row(s) == Some(">"));
        times.push(started.elapsed());
        pty.send("\u{4}");
        pty.wait_exit(LIMIT);
    }
    times.sort();
    times
}

/// Keys typed one at a time while a teammate works: each of its tool calls prints a line
/// above the prompt.
fn echo_under_load(server: &FakeServer, keys: usize) -> (Vec<Duration>, bool) {
    let ws = TempWorkspace::new();
    std::fs::write(ws.path().join("notes.txt"), "notes\n").unwrap();
    server.set_fallback(|rec| {
        let spawned = rec.messages().iter().any(|m| {
            m.content.iter().any(|b| {
                matches!(b, troupe_protocol::ContentBlock::ToolUse { name, .. } if name == "spawn_teammate")
            })
        });
        let reply = match rec.agent.as_str() {
            "lead" if !spawned => Reply::tool(
                "spawn_teammate",
                serde_json::json!({"name": "alice", "role": "reader", "prompt": "read notes.txt"}),
            ),
            "lead" => Reply::text("alice is reading"),
            _ => Reply::tool("read_file", serde_json::json!({"path": "notes.txt"})),
        };
        Step::reply(reply)
    });
    let mut pty = repl(ws.path(), server);
    pty.wait_for("the prompt", LIMIT, |s| prompt_row(s) == Some(">"));
    pty.send("start alice\r");
    pty.wait_for_text("[alice] ⏺ read_file", LIMIT);
    pty.wait_for("the prompt", LIMIT, |s| prompt_row(s) == Some(">"));
    let mut typed = String::new();
    let mut times = Vec::new();
    for i in 0..keys {
        let c = char::from(b'a' + (i % 26) as u8);
        typed.push(c);
        if typed.len() > 60 {
            // Keep the line short of the window: Ctrl-U, then start again.
            pty.send("\u{15}");
            pty.wait_for("an empty prompt", LIMIT, |s| prompt_row(s) == Some(">"));
            typed = c.to_string();
        }
        let want = format!("> {typed}");
        let started = Instant::now();
        pty.send(&c.to_string());
        pty.wait_for("the echo", LIMIT, |s| prompt_row(s) == Some(want.as_str()));
        times.push(started.elapsed());
    }
    let before = pty.raw().len();
    std::thread::sleep(Duration::from_millis(200));
    let still_streaming = pty.raw().len() > before;
    pty.send("\u{3}");
    times.sort();
    (times, still_streaming)
}

fn main() {
    support::wrapper_main_if_requested();
    let starts = arg_value("--starts").unwrap_or(20);
    let keys = arg_value("--keys").unwrap_or(200);
    let server = FakeServer::start();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load before: {}", load.trim());

    let times = start_up(&server, starts);
    let p50 = ms(quantile(&times, 0.5));
    let p99 = ms(quantile(&times, 0.99));
    println!(
        "start-up to prompt ({starts} runs): min {:.1} ms, p50 {p50:.1} ms, p99 {p99:.1} ms \
         (target < {TARGET_START_MS} ms: {})",
        ms(times[0]),
        verdict(p50 < TARGET_START_MS)
    );

    let (times, under_load) = echo_under_load(&server, keys);
    let p50 = ms(quantile(&times, 0.5));
    let p99 = ms(quantile(&times, 0.99));
    println!(
        "keystroke to echo ({keys} keys, output streaming above: {under_load}): p50 {p50:.2} ms, \
         p99 {p99:.2} ms, max {:.2} ms (target p99 < {TARGET_ECHO_MS} ms: {})",
        ms(*times.last().unwrap()),
        verdict(p99 < TARGET_ECHO_MS)
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load after: {}", load.trim());
}
