//! The regression guard of what a teammate costs the file store, beside the headless loop's
//! syscall budget: a lead spawns in-process teammates in one response, each runs one tool round
//! and reports, under `strace -f`; the run is made with a few teammates and with more, and the
//! difference divided by the teammates added is one teammate's cost: the files it leaves in the
//! team's folder (its transcript and inbox count), its `openat`s, its syncs (all, and those of
//! the team's shared files: roster, events, mailboxes) and its system calls. Compared with
//! `tests/fixtures/teammate_baseline.json`; a figure more than 25 % over it fails. (A teammate
//! *start* alone, at most two syncs and one file, is `troupe-store`'s `tests/teammate_start.rs`.)
//!
//! Counts, not time. `strace` is installed by `scripts/test-deps.sh`; without it the strace
//! figures are skipped (the file count is still checked), unless `CI=true`, where it fails.
//! After a change meant to cost more (or one that saved a lot), write the new baseline with
//! `TROUPE_WRITE_BASELINE=1 cargo test -p troupe-cli --test teammate_cost` and commit it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
#[allow(dead_code)] // the headless guard's figures are not this test's
#[path = "syscall_budget/count.rs"]
mod count;

use std::path::Path;
use std::process::Command;

use common::troupe;
use count::Counts;
use serde_json::json;
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace, Wire};

/// The fewest and the most teammates of the two runs compared.
const FEW: usize = 2;
const MANY: usize = 30;

fn mate_name(i: usize) -> String {
    format!("mate-{i:02}")
}

fn lead_step(req: &Recorded, teammates: usize) -> Step {
    if req.messages().len() > 1 {
        return Step::text("all teammates reported");
    }
    let mut reply = Reply::default();
    for i in 0..teammates {
        reply = reply.with_tool(
            "spawn_teammate",
            json!({"name": mate_name(i), "role": "worker", "prompt": "Look, then report."}),
        );
    }
    Step::reply(reply)
}

fn mate_step(req: &Recorded) -> Step {
    match req.last_tool_result() {
        Some(_) => Step::text(&format!("{}: done", req.agent)),
        None => Step::tool("glob", json!({"pattern": "*.md"})),
    }
}

/// What one run left and did.
struct Run {
    files: u64,
    counts: Option<Counts>,
}

/// Regular files and sockets under `dir`, recursively.
fn files_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&e.path()),
            Ok(_) => 1,
            Err(_) => 0,
        })
        .sum()
}

fn one_run(teammates: usize, traced: bool) -> Run {
    let ws = TempWorkspace::new();
    ws.write("README.md", "# demo\n");
    let server = FakeServer::start();
    server.set_fallback(move |req| {
        if req.agent == "lead" {
            lead_step(req, teammates)
        } else {
            mate_step(req)
        }
    });
    let inner = troupe(ws.path(), &server, Wire::Anthropic);
    let trace = ws.path().join(".strace");
    let mut cmd = if traced {
        let mut strace = Command::new("strace");
        strace
            .args(["-f", "-qq", "-yy", "-s", "64", "-o"])
            .arg(&trace)
            .arg(inner.get_program());
        strace
    } else {
        Command::new(inner.get_program())
    };
    cmd.args(inner.get_args())
        .args([
            "-p",
            "spawn the team",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
            "--team-timeout",
            "120",
        ])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::null());
    count::same_env(&mut cmd, &inner);
    let out = cmd.output().expect("the run starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all teammates reported"),
        "the team run failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = server
        .journal()
        .iter()
        .filter(|r| r.agent != "lead")
        .count();
    assert_eq!(reports, 2 * teammates, "every teammate makes two calls");
    let files = files_under(&ws.path().join(".troupe/teams/default"));
    let counts = traced.then(|| {
        let text = std::fs::read_to_string(&trace).expect("strace wrote its trace");
        if let Some(keep) = std::env::var_os("TROUPE_KEEP_TRACE") {
            std::fs::write(format!("{}.{teammates}", keep.to_string_lossy()), &text).unwrap();
        }
        Counts::of_trace(&text)
    });
    Run { files, counts }
}

/// Whether strace runs here; else its figures are skipped, but not under `CI=true`.
fn have_strace() -> bool {
    let here = Command::new("strace")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "strace is missing; scripts/test-deps.sh installs it"
        );
        eprintln!("skipped the syscall figures: strace is not installed");
    }
    here
}

/// One teammate's share of `figure` between the runs with `FEW` and `MANY` teammates, in
/// hundredths (a teammate's syncs are shared, so its share is rarely whole).
fn per_teammate(few: u64, many: u64) -> u64 {
    many.saturating_sub(few) * 100 / (MANY - FEW) as u64
}

#[test]
fn a_teammate_costs_no_more_files_opens_and_syncs_than_its_budget() {
    let traced = have_strace();
    // The quietest of two pairs of runs: an open split by a slow writer moves with timing.
    let pairs: Vec<(Run, Run)> = (0..2)
        .map(|_| (one_run(FEW, traced), one_run(MANY, traced)))
        .collect();
    let floor = |f: &dyn Fn(&Run) -> u64| {
        pairs
            .iter()
            .map(|(few, many)| per_teammate(f(few), f(many)))
            .min()
            .unwrap_or(0)
    };
    let mut measured = vec![("files_x100", floor(&|r| r.files))];
    if traced {
        let of = |pick: fn(&Counts) -> u64| move |r: &Run| r.counts.as_ref().map_or(0, pick);
        measured.push(("openat_x100", floor(&of(|c| c.openat))));
        measured.push(("syncs_x100", floor(&of(|c| c.syncs))));
        measured.push(("store_syncs_x100", floor(&of(|c| c.store_syncs))));
        measured.push(("syscalls_x100", floor(&of(|c| c.syscalls))));
    }
    count::within_budget(
        "teammate_baseline.json",
        &measured,
        "one teammate's cost, in hundredths",
        "TROUPE_KEEP_TRACE=FILE keeps the traces",
    );
}
