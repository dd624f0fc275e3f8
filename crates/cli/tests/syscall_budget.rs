//! The regression guard of the headless loop's cost: one `troupe -p` run of the
//! two-call loop ("list the files": one bash call, then an answer) against the fake model server,
//! counted with `strace -f` and, for its heap allocations, under valgrind's memcheck, compared
//! with the committed baselines (`tests/fixtures/syscall_baseline.json`, `alloc_baseline.json`).
//! Any figure more than 25 % over its baseline fails.
//!
//! Counts, not wall time, so a busy machine cannot fail it: the system calls of troupe's own
//! threads (not of the programs it starts), less those whose number depends on scheduling
//! (futex waits, epoll waits, eventfd wake-ups); the threads and processes it starts; its
//! `openat`s, failing `readlink`s, syncs and memory-map calls.
//!
//! `strace` and `valgrind` are installed by `scripts/test-deps.sh`. Without them the tests are
//! skipped, unless `CI=true`, where they fail. After a change that is meant to cost more (or that saved a lot),
//! write the new baselines with `TROUPE_WRITE_BASELINE=1 cargo test -p troupe-cli --test
//! syscall_budget` and commit them with the change.
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

/// One run of the two-call loop in `bypassPermissions` (the sandbox's cost depends on the
/// kernel; `cargo bench -p troupe-tools --bench sandbox` measures it), started by the program
/// `wrapper` makes for the run's workspace (strace, valgrind): the model calls `call` (a tool
/// and its input), then answers with what it returned; checks the answer holds `seen`.
fn wrapped_run(
    call: (&'static str, serde_json::Value),
    seen: &str,
    wrapper: impl FnOnce(&Path) -> Command,
) -> (TempWorkspace, std::process::Output) {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    let server = FakeServer::start();
    server.set_fallback(move |req| match req.last_tool_result() {
        None => Step::tool(call.0, call.1.clone()),
        Some((output, _)) => Step::reply(Reply::text(format!("listed: {}", output.trim()))),
    });
    let inner = troupe(ws.path(), &server, Wire::Anthropic);
    let mut cmd = wrapper(ws.path());
    cmd.arg(inner.get_program())
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
    count::same_env(&mut cmd, &inner);
    // Programs are looked up on PATH by troupe: a short one, so a long PATH elsewhere does not
    // count.
    cmd.env("PATH", "/usr/bin:/bin");
    // Cargo's build-script folders on the library path would make the loader look in each.
    cmd.env_remove("LD_LIBRARY_PATH");
    let out = cmd.output().expect("the wrapped run starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the wrapped run failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(seen),
        "the loop did not run the tool call: {stdout}"
    );
    (ws, out)
}

/// One run counted with `strace -f`.
fn traced_run() -> Counts {
    let ls = ("bash", json!({"command": "ls"}));
    let (ws, _) = wrapped_run(ls, "listed: Cargo.toml", |ws| {
        let mut strace = Command::new("strace");
        strace
            .args(["-f", "-qq", "-yy", "-s", "64", "-o"])
            .arg(ws.join(".strace"));
        strace
    });
    let text = std::fs::read_to_string(ws.path().join(".strace")).expect("strace wrote its trace");
    // To see what a run does: TROUPE_KEEP_TRACE=FILE keeps the last run's trace there.
    if let Some(keep) = std::env::var_os("TROUPE_KEEP_TRACE") {
        std::fs::write(keep, &text).expect("the trace is kept");
    }
    Counts::of_trace(&text)
}

/// Whether `program` runs here; else the test is skipped, but not under `CI=true`, where
/// `scripts/test-deps.sh` installed it.
fn required(program: &str) -> bool {
    let here = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is missing; scripts/test-deps.sh installs it"
        );
        eprintln!("skipped: {program} is not installed (scripts/test-deps.sh installs it)");
    }
    here
}

#[test]
fn the_headless_loop_stays_within_its_syscall_budget() {
    if !required("strace") {
        return;
    }
    // The figures of the quietest of three runs: a figure that moves with timing (a read split
    // in two by a slow writer) is taken at its floor, like the baseline was.
    let runs: Vec<Counts> = (0..3).map(|_| traced_run()).collect();
    let measured = Counts::floor(&runs);
    // Not a budget but a rule: the run syncs its transcript once at the end of each
    // of its two model rounds, and nothing else (the session team's first roster is left in
    // the page cache; the next open writes it again).
    assert!(
        runs.iter().all(|c| c.syncs <= 2),
        "a plain -p run of two model rounds synced more than its transcript, once a round: {:?}",
        runs.iter().map(|c| c.syncs).collect::<Vec<_>>()
    );
    count::within_budget(
        "syscall_baseline.json",
        &measured.figures(),
        "the headless loop",
        "strace -f the run, or valgrind --tool=dhat",
    );
}

/// The heap blocks and bytes one run allocates, as valgrind's memcheck counts them: `total heap
/// usage: N allocs, M frees, B bytes allocated`. The run's tool call writes the todo list
/// rather than running `ls`, as no tool that starts a program or opens a file works under
/// valgrind: it emulates troupe's `clone(CLONE_VM | CLONE_VFORK)` spawn as a fork (most runs'
/// spawn then fails, "No child processes") and has no `openat2` (the file tools refuse to run
/// without it). The spawn's and the file tools' cost is left to the syscall budget.
fn allocations() -> [(&'static str, u64); 2] {
    let todo = json!({"todos": [{"content": "list the files", "status": "in_progress", "activeForm": "listing the files"}]});
    let (_, out) = wrapped_run(
        ("todo_write", todo),
        "listed: Todo list saved (1 items",
        |_| {
            let mut valgrind = Command::new("valgrind");
            valgrind.args(["--tool=memcheck", "--leak-check=no", "--trace-children=no"]);
            valgrind
        },
    );
    let report = String::from_utf8_lossy(&out.stderr);
    let usage = report
        .lines()
        .find_map(|l| l.split_once("total heap usage:"))
        .map(|(_, usage)| usage.split_whitespace().collect::<Vec<_>>())
        .unwrap_or_else(|| panic!("valgrind reported no heap usage: {report}"));
    let number = |i: usize, unit: &str| -> u64 {
        assert_eq!(usage.get(i + 1).copied(), Some(unit), "{usage:?}");
        usage[i].replace(',', "").parse().unwrap()
    };
    [
        ("allocations", number(0, "allocs,")),
        ("allocated_bytes", number(4, "bytes")),
    ]
}

#[test]
fn the_headless_loop_stays_within_its_allocation_budget() {
    if !required("valgrind") {
        return;
    }
    // One run: what a run allocates moves by a few tenths of a percent between runs.
    count::within_budget(
        "alloc_baseline.json",
        &allocations(),
        "the headless loop",
        "strace -f the run, or valgrind --tool=dhat",
    );
}
