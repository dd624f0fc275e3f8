//! No process outlives its call: double-forked daemons, cancelled calls, and `end_all` when
//! troupe is told to stop. Real processes; waits are bounded polls on a condition.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, eventually, ok, pid_once_written, Fixture};
use serde_json::json;
use std::path::Path;
use troupe_tools::Sandbox;

/// `/proc/<pid>` exists: running, or a zombie nobody reaped.
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A command that starts `sleep 300` as a double-forked daemon in its own session, and prints
/// its pid once the pid file is complete.
fn daemon_command(dir: &str) -> String {
    format!(
        "(setsid sh -c 'sleep 300 & echo $! > {dir}/d.tmp; mv {dir}/d.tmp {dir}/d.pid' &); \
         while [ ! -e {dir}/d.pid ]; do sleep 0.01; done; echo daemon=$(cat {dir}/d.pid)"
    )
}

fn daemon_pid(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.strip_prefix("daemon="))
        .unwrap_or_else(|| panic!("no daemon pid in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_double_forked_daemon_is_ended_and_reaped_before_the_call_returns() {
    troupe_tools::process::become_subreaper().unwrap();
    let f = Fixture::new();
    let text = ok(f
        .call("bash", json!({"command": daemon_command(".")}))
        .await);
    let pid = daemon_pid(&text);
    assert!(!alive(pid), "daemon {pid} outlived the call: {text}");
    assert!(!exists(pid), "daemon {pid} was left a zombie");
}

#[tokio::test]
async fn a_daemon_started_under_the_read_only_sandbox_is_ended_too() {
    troupe_tools::process::become_subreaper().unwrap();
    if !troupe_tools::sandbox::support().is_available() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    // A pid printed inside the call's own PID namespace means nothing out here: the daemon is
    // known by its unique argument instead.
    let marker = format!("300.{}", std::process::id());
    let command = format!(
        "(setsid sh -c 'sleep {marker} & echo $! > \"$TMPDIR\"/d.tmp; mv \"$TMPDIR\"/d.tmp \"$TMPDIR\"/d.pid' &); \
         while [ ! -e \"$TMPDIR\"/d.pid ]; do sleep 0.01; done; echo started"
    );
    let text = ok(f.call("bash", json!({ "command": command })).await);
    assert!(text.contains("started"), "{text}");
    let left = running_with_argument(&marker);
    assert!(
        left.is_empty(),
        "daemons {left:?} outlived the call: {text}"
    );
}

/// The running processes (seen from here) one of whose arguments is `arg`.
fn running_with_argument(arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

#[tokio::test]
async fn a_cancelled_call_ends_its_daemon() {
    troupe_tools::process::become_subreaper().unwrap();
    let f = Fixture::new();
    let pid_file = f.root().join("d.pid");
    let command = format!("{}; sleep 300", daemon_command("."));
    let call = f.call("bash", json!({ "command": command }));
    let pid = tokio::select! {
        output = call => panic!("the command should still be running: {output:?}"),
        pid = pid_once_written(&pid_file) => pid,
    };
    assert!(
        eventually(|| !alive(pid)).await,
        "daemon {pid} survived the dropped call"
    );
}

/// Calls ending together share their looks at troupe's process tree: each still ends its own
/// daemon, and only its own (the others' shells are running when it ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_ending_together_each_end_their_own_daemon() {
    troupe_tools::process::become_subreaper().unwrap();
    let f = Fixture::new();
    let calls = (0..6).map(|i| {
        let dir = format!("c{i}");
        std::fs::create_dir_all(f.root().join(&dir)).unwrap();
        // Half of them linger so that the others end with shells still running beside them.
        let tail = if i % 2 == 0 { "; sleep 0.3" } else { "" };
        f.call(
            "bash",
            json!({"command": format!("{}{tail}", daemon_command(&dir))}),
        )
    });
    let outputs = futures_util::future::join_all(calls).await;
    for output in outputs {
        let text = ok(output);
        let pid = daemon_pid(&text);
        assert!(!alive(pid), "daemon {pid} outlived its call: {text}");
        assert!(!exists(pid), "daemon {pid} was left a zombie");
    }
}
