//! Ctrl-C in a headless run interrupts the turn through the session driver, and the run still
//! reports: a result object for scripts that parse one, and exit code 130.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::troupe;
use std::process::{Child, Stdio};
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// A `-p` run whose model call hangs, started with `args`, once its call has arrived.
fn hanging_run(ws: &TempWorkspace, server: &FakeServer, args: &[&str]) -> Child {
    let child = troupe(ws.path(), server, Wire::Anthropic)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("troupe binary runs");
    troupe_testkit::wait_until(
        "the lead calling the model",
        Duration::from_secs(30),
        || !server.requests_for("lead").is_empty(),
    );
    child
}

fn interrupt(child: &Child) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child touches no memory.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

fn hanging_server() -> FakeServer {
    common::lead_server([Step::delay(
        Duration::from_secs(120),
        Step::text("too late"),
    )])
}

#[test]
fn ctrl_c_on_json_output_prints_an_error_result_and_exits_130() {
    let ws = TempWorkspace::new();
    let server = hanging_server();
    let child = hanging_run(
        &ws,
        &server,
        &["-p", "work slowly", "--output-format", "json"],
    );
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    let result = common::result_json(&out);
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "interrupted", "{result}");
}

#[test]
fn ctrl_c_on_stream_json_output_ends_the_stream_with_the_result() {
    let ws = TempWorkspace::new();
    let server = hanging_server();
    let child = hanging_run(
        &ws,
        &server,
        &[
            "-p",
            "work slowly",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    );
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let lines = common::json_lines(&out);
    assert_eq!(lines.first().unwrap()["subtype"], "init");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["subtype"], "error_during_execution");
}

#[test]
fn ctrl_c_on_text_output_says_so_on_stderr_and_exits_130() {
    let ws = TempWorkspace::new();
    let server = hanging_server();
    let child = hanging_run(&ws, &server, &["-p", "work slowly"]);
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(out.stdout.is_empty());
    common::assert_stderr_has(&out, "interrupted");
}
