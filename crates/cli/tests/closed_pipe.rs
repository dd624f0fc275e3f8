//! A closed pipe ends every subcommand quietly: `troupe team status | head -1` exits 0 or by
//! SIGPIPE (141 in a shell), never with a panic ("failed printing to stdout").
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, stderr, troupe};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// Runs `cmd` with its stdout a pipe nobody reads (the read end closed before it starts).
fn with_closed_stdout(cmd: &mut Command) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    cmd.stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("troupe runs")
}

/// Exit 0, or ended by SIGPIPE; and no panic on stderr.
#[track_caller]
fn ended_quietly(what: &str, out: &Output) {
    let err = stderr(out);
    assert!(
        out.status.success() || out.status.signal() == Some(libc_sigpipe()),
        "{what}: {:?}, stderr: {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what} panicked: {err}");
    assert!(!err.contains("Broken pipe"), "{what}: {err}");
}

/// SIGPIPE's number on Linux.
fn libc_sigpipe() -> i32 {
    13
}

#[test]
fn every_subcommand_ends_quietly_when_nobody_reads_its_output() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.git_commit_all("first");
    let server = FakeServer::start();
    server.script("lead", [Step::text("a first session, for the lists below")]);
    let out = headless_bypass(ws.path(), &server, "hello", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));

    let subcommands: &[&[&str]] = &[
        &["team", "status"],
        &["team", "status", "--json"],
        &["team", "log"],
        &["team", "inbox", "lead"],
        &["team", "requests"],
        &["sessions"],
        &["sessions", "--json"],
        &["task", "list"],
        &["task", "create", "write the parser"],
        &["task", "list", "--json"],
        &["cron", "list"],
        &["config"],
        &["worktree", "list"],
        &["mcp", "list"],
        &["sandbox", "check"],
        &["trust"],
        &["doctor"],
        &["--help"],
        &["team", "--help"],
    ];
    for args in subcommands {
        let out = with_closed_stdout(troupe(ws.path(), &server, Wire::Anthropic).args(*args));
        ended_quietly(&args.join(" "), &out);
    }

    // Headless, whose answer is written once the run is over.
    server.script("lead", [Step::text("one\ntwo\nthree")]);
    let out = with_closed_stdout(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    ended_quietly("-p", &out);
}
