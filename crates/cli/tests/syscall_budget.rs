//! The regression guard of the headless loop's cost (issue 30): one `troupe -p` run of the
//! two-call loop ("list the files": one bash call, then an answer) against the fake model server,
//! counted with `strace -f`, compared with the committed baseline
//! (`tests/fixtures/syscall_baseline.json`). Any figure more than 25 % over its baseline fails.
//!
//! Counts, not wall time, so a busy machine cannot fail it: the system calls of troupe's own
//! threads (not of the programs it starts), less those whose number depends on scheduling
//! (futex waits, epoll waits, eventfd wake-ups); the threads and processes it starts; its
//! `openat`s, failing `readlink`s, syncs and memory-map calls.
//!
//! `strace` is installed by `scripts/test-deps.sh`. Without it the test is skipped, unless
//! `CI=true`, where it fails. After a change that is meant to cost more (or that saved a lot),
//! write the new baseline with `TROUPE_WRITE_BASELINE=1 cargo test -p troupe-cli --test
//! syscall_budget` and commit it with the change.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
#[path = "syscall_budget/count.rs"]
mod count;

use common::troupe;
use count::Counts;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// How far over the baseline a figure may go.
const TOLERANCE: f64 = 1.25;

fn baseline_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/syscall_baseline.json")
}

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One traced run of the two-call loop in `bypassPermissions` (the sandbox's cost depends on the
/// kernel; `cargo bench -p troupe-tools --bench sandbox` measures it).
fn traced_run() -> Counts {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    let server = FakeServer::start();
    server.set_fallback(|req| match req.last_tool_result() {
        None => Step::tool("bash", json!({"command": "ls"})),
        Some((output, _)) => Step::reply(Reply::text(format!("listed: {}", output.trim()))),
    });
    let trace = ws.path().join(".strace");
    let inner = troupe(ws.path(), &server, Wire::Anthropic);
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-yy", "-s", "64", "-o"])
        .arg(&trace)
        .arg(inner.get_program())
        .args(inner.get_args())
        .args([
            "-p",
            "list the files",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::null());
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    // The shell is looked up on PATH by troupe: a short one, so a long PATH elsewhere does not
    // count.
    cmd.env("PATH", "/usr/bin:/bin");
    // Cargo's build-script folders on the library path would make the loader look in each.
    cmd.env_remove("LD_LIBRARY_PATH");
    let out = cmd.output().expect("strace runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the traced run failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("listed: Cargo.toml"),
        "the loop did not run the bash call: {stdout}"
    );
    let text = std::fs::read_to_string(&trace).expect("strace wrote its trace");
    // To see what a run does: TROUPE_KEEP_TRACE=FILE keeps the last run's trace there.
    if let Some(keep) = std::env::var_os("TROUPE_KEEP_TRACE") {
        std::fs::write(keep, &text).expect("the trace is kept");
    }
    Counts::of_trace(&text)
}

#[test]
fn the_headless_loop_stays_within_its_syscall_budget() {
    if !strace_available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "strace is missing; scripts/test-deps.sh installs it"
        );
        eprintln!("skipped: strace is not installed (scripts/test-deps.sh installs it)");
        return;
    }
    // The figures of the quietest of three runs: a figure that moves with timing (a read split
    // in two by a slow writer) is taken at its floor, like the baseline was.
    let runs: Vec<Counts> = (0..3).map(|_| traced_run()).collect();
    let measured = Counts::floor(&runs);
    // Not a budget but a rule (issue 30): the run syncs its transcript once at the end of each
    // of its two model rounds, and nothing else (the session team's first roster is left in
    // the page cache; the next open writes it again).
    assert!(
        runs.iter().all(|c| c.syncs <= 2),
        "a plain -p run of two model rounds synced more than its transcript, once a round: {:?}",
        runs.iter().map(|c| c.syncs).collect::<Vec<_>>()
    );
    if std::env::var_os("TROUPE_WRITE_BASELINE").is_some() {
        let text = serde_json::to_string_pretty(&measured.to_json()).unwrap();
        std::fs::write(baseline_path(), text + "\n").unwrap();
        eprintln!("wrote {}", baseline_path().display());
        return;
    }
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(baseline_path()).unwrap()).unwrap();
    let mut over = Vec::new();
    let mut table = String::new();
    for (name, value) in measured.figures() {
        let base = baseline[name]
            .as_u64()
            .unwrap_or_else(|| panic!("the baseline has no figure {name}"));
        let limit = (base as f64 * TOLERANCE).ceil() as u64;
        table.push_str(&format!(
            "{name:<24} {value:>6} (baseline {base}, limit {limit})\n"
        ));
        if value > limit {
            over.push(name);
        }
    }
    eprintln!("{table}");
    assert!(
        over.is_empty(),
        "the headless loop costs more than 25 % over its baseline in {over:?}:\n{table}\
         Find what made it (strace -f the run); if the cost is meant, write the new baseline \
         (TROUPE_WRITE_BASELINE=1) and commit it with the change."
    );
}
