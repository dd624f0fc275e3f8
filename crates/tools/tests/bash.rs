//! The bash tool: output capture, exit codes, timeouts and process-group cleanup.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, err, ok, pid_once_written, Fixture};
use serde_json::json;
use std::time::Duration;

/// Waits (boundedly) for a process to disappear; SIGKILL delivery is asynchronous.
async fn gone(pid: u32) -> bool {
    for _ in 0..200 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The pid printed as `bg=<pid>` by a test command.
fn background_pid(output: &str) -> u32 {
    let start = output
        .find("bg=")
        .expect("command printed its background pid")
        + 3;
    output[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn captures_stdout_and_stderr_interleaved_with_exit_code() {
    let f = Fixture::new();
    let text = ok(f
        .call(
            "bash",
            json!({"command": "echo one; echo two >&2; echo three"}),
        )
        .await);
    assert_eq!(text, "one\ntwo\nthree\nexit code: 0");
}

#[tokio::test]
async fn runs_in_the_workspace_root_with_stdin_closed() {
    let f = Fixture::new();
    let text = ok(f
        .call("bash", json!({"command": "pwd; cat; echo done"}))
        .await);
    assert_eq!(text, format!("{}\ndone\nexit code: 0", f.root().display()));
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_the_code() {
    let f = Fixture::new();
    let text = err(f
        .call("bash", json!({"command": "echo failing; exit 3"}))
        .await);
    assert_eq!(text, "failing\nexit code: 3");
    let text = err(f.call("bash", json!({"command": "exit 1"})).await);
    assert_eq!(text, "(no output)\nexit code: 1");
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let f = Fixture::new();
    let text = err(f.call("bash", json!({"command": "kill -9 $$"})).await);
    assert!(text.contains("killed by signal 9 (SIGKILL)"), "{text}");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let output = f
        .call(
            "bash",
            json!({"command": "sleep 30 & echo bg=$!; sleep 30", "timeout_ms": 300}),
        )
        .await;
    let text = err(output);
    assert!(text.contains("timed out after 300 ms"), "{text}");
    let pid = background_pid(&text);
    assert!(
        gone(pid).await,
        "background grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn background_leftovers_are_killed_when_the_command_ends() {
    let f = Fixture::new();
    let text = ok(f
        .call("bash", json!({"command": "sleep 30 & echo bg=$!"}))
        .await);
    assert!(text.ends_with("exit code: 0"), "{text}");
    let pid = background_pid(&text);
    assert!(
        gone(pid).await,
        "background process {pid} outlived the call"
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let f = Fixture::new();
    let pid_file = f.root().join("bg.pid");
    let call = f.call(
        "bash",
        json!({"command": "sleep 30 & echo $! > bg.pid.tmp && mv bg.pid.tmp bg.pid; wait"}),
    );
    // Run the call until the pid file appears, then drop it, as a Ctrl-C would.
    let pid = tokio::select! {
        output = call => panic!("the command should still be running: {output:?}"),
        pid = pid_once_written(&pid_file) => pid,
    };
    assert!(gone(pid).await, "process {pid} survived the dropped call");
}

#[tokio::test]
async fn long_output_keeps_head_and_tail_and_states_total_size() {
    let f = Fixture::new();
    let text = ok(f.call("bash", json!({"command": "seq 1 100000"})).await);
    let total: usize = (1..=100_000).map(|i: u32| i.to_string().len() + 1).sum();
    assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..50]);
    assert!(text.ends_with("99999\n100000\nexit code: 0"));
    assert!(text.contains(&format!("{total} bytes in total")), "{total}");
    assert!(text.contains("bytes omitted"));
    assert!(text.len() < 31_000, "{}", text.len());
}

#[tokio::test]
async fn a_cd_holds_for_the_next_call_inside_the_workspace_only() {
    use troupe_tools::Sandbox;
    for level in [Sandbox::Unsandboxed, Sandbox::ReadOnly] {
        let f = Fixture::new().sandboxed(level);
        std::fs::create_dir_all(f.root().join("sub/deeper")).unwrap();
        let root = f.root().canonicalize().unwrap();
        ok(f.call("bash", json!({"command": "cd sub && echo moved"}))
            .await);
        let text = ok(f.call("bash", json!({"command": "pwd"})).await);
        assert_eq!(
            text,
            format!("{}\nexit code: 0", root.join("sub").display())
        );
        // A failing call still keeps where it ended; a plain command does not move.
        err(f.call("bash", json!({"command": "cd deeper; false"})).await);
        let text = ok(f.call("bash", json!({"command": "pwd"})).await);
        assert_eq!(
            text,
            format!("{}\nexit code: 0", root.join("sub/deeper").display())
        );
        let text = ok(f.call("bash", json!({"command": "cd / && echo out"})).await);
        assert!(
            text.contains(&format!("Shell cwd was reset to {}", root.display())),
            "{text}"
        );
        let text = ok(f.call("bash", json!({"command": "pwd"})).await);
        assert_eq!(text, format!("{}\nexit code: 0", root.display()));
    }
}
