//! Background commands with real processes: started at once, output read incrementally, a
//! notification when they finish, killed with their whole process group, confined by the
//! same sandbox as a foreground call, and ended when their agent's jobs are dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, err, eventually, ok, pid_once_written, Fixture};
use serde_json::json;
use std::time::Duration;
use troupe_tools::background::{BashOutputTool, JobStatus, Jobs, KillBackgroundTool};
use troupe_tools::{Sandbox, Tool};

/// A fixture whose calls belong to fresh background jobs logging under the workspace.
fn with_jobs() -> (Fixture, Jobs) {
    let mut f = Fixture::new();
    let jobs = Jobs::new("tester", f.root().join(".logs"));
    f.ctx = f.ctx.clone().with_background(jobs.clone());
    (f, jobs)
}

#[tokio::test]
async fn starts_at_once_reads_new_output_and_notifies_when_done() {
    let (f, jobs) = with_jobs();
    let started = ok(f
        .call(
            "bash",
            json!({"command": "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 3",
                   "run_in_background": true}),
        )
        .await);
    assert!(started.contains("id bg-1"), "{started}");
    assert!(started.contains(".logs/bg-1.log"), "{started}");
    assert_eq!(jobs.running().len(), 1, "it runs after the call returned");
    let log = f.root().join(".logs/bg-1.log");
    assert!(eventually(|| std::fs::read_to_string(&log).is_ok_and(|t| t.contains("first"))).await);

    let read = ok(BashOutputTool.call(json!({"id": "bg-1"}), &f.ctx).await);
    assert!(read.contains("bg-1: running"), "{read}");
    assert!(read.contains("first") && !read.contains("second"), "{read}");
    assert!(!jobs.has_pending(), "no notification while it runs");

    f.write("go", "");
    tokio::time::timeout(Duration::from_secs(20), jobs.wait_pending())
        .await
        .expect("the notification comes");
    let pending = jobs.pending();
    assert_eq!(pending.len(), 1);
    let text = &pending[0].text;
    assert!(text.starts_with("<task_notification>"), "{text}");
    assert!(text.contains("id: bg-1"), "{text}");
    assert!(text.contains("command: echo first;"), "{text}");
    assert!(text.contains("status: exited with code 3"), "{text}");
    let output = text
        .split("output (last lines not yet read):")
        .nth(1)
        .unwrap();
    assert!(
        output.contains("second") && !output.contains("first"),
        "the tail holds only what was not read yet: {text}"
    );
    assert_eq!(jobs.outstanding().len(), 1, "finished but not yet told");

    jobs.acknowledge(pending[0].seq);
    assert!(!jobs.has_pending());
    assert!(jobs.outstanding().is_empty());
    let read = ok(BashOutputTool.call(json!({"id": "bg-1"}), &f.ctx).await);
    assert!(read.contains("exited with code 3"), "{read}");
    assert!(read.contains("second") && !read.contains("first"), "{read}");
    let again = ok(BashOutputTool
        .call(json!({"bash_id": "bg-1"}), &f.ctx)
        .await);
    assert!(again.contains("(no new output)"), "{again}");
}

#[tokio::test]
async fn reading_the_final_status_withdraws_the_notification() {
    let (f, jobs) = with_jobs();
    ok(f.call(
        "bash",
        json!({"command": "echo hi", "run_in_background": true}),
    )
    .await);
    tokio::time::timeout(Duration::from_secs(20), jobs.wait_pending())
        .await
        .expect("it finishes");
    let read = ok(BashOutputTool.call(json!({"id": "bg-1"}), &f.ctx).await);
    assert!(
        read.contains("exited with code 0") && read.contains("hi"),
        "{read}"
    );
    assert!(!jobs.has_pending(), "the model already knows how it ended");
}

#[tokio::test]
async fn kill_ends_the_whole_process_group_and_says_nothing_more() {
    troupe_tools::process::become_subreaper().unwrap();
    let (f, jobs) = with_jobs();
    ok(f
        .call(
            "bash",
            json!({"command": "sleep 300 & echo $! > child.tmp && mv child.tmp child.pid; echo $$ > shell.tmp && mv shell.tmp shell.pid; wait",
                   "run_in_background": true}),
        )
        .await);
    let child = pid_once_written(&f.root().join("child.pid")).await;
    let shell = pid_once_written(&f.root().join("shell.pid")).await;
    assert!(alive(child) && alive(shell));
    let killed = ok(KillBackgroundTool.call(json!({"id": "bg-1"}), &f.ctx).await);
    assert!(killed.contains("bg-1 was killed"), "{killed}");
    assert!(!alive(child), "the group's sleep {child} survived");
    assert!(!alive(shell), "the shell {shell} survived");
    assert_eq!(jobs.list()[0].status, JobStatus::Killed);
    assert!(!jobs.has_pending(), "a kill it asked for is no news");
    let again = ok(KillBackgroundTool.call(json!({"id": "bg-1"}), &f.ctx).await);
    assert!(again.contains("already ended"), "{again}");
    let unknown = err(BashOutputTool.call(json!({"id": "bg-9"}), &f.ctx).await);
    assert!(unknown.contains("bg-1 (killed)"), "{unknown}");
}

#[tokio::test]
async fn dropping_the_jobs_ends_what_still_runs() {
    troupe_tools::process::become_subreaper().unwrap();
    let (mut f, jobs) = with_jobs();
    ok(f.call(
        "bash",
        json!({"command": "echo $$ > shell.tmp && mv shell.tmp shell.pid; sleep 300",
                   "run_in_background": true}),
    )
    .await);
    let shell = pid_once_written(&f.root().join("shell.pid")).await;
    f.ctx.background = None;
    drop(jobs);
    assert!(
        eventually(|| !alive(shell)).await,
        "the agent is gone but its command {shell} runs on"
    );
}

#[tokio::test]
async fn a_timeout_kills_it_and_is_reported() {
    let (f, jobs) = with_jobs();
    ok(f.call(
        "bash",
        json!({"command": "sleep 300", "run_in_background": true, "timeout_ms": 200}),
    )
    .await);
    tokio::time::timeout(Duration::from_secs(20), jobs.wait_pending())
        .await
        .expect("the timeout ends it");
    let text = &jobs.pending()[0].text;
    assert!(text.contains("timed out after 200 ms"), "{text}");
}

#[tokio::test]
async fn a_read_only_call_stays_read_only_in_the_background() {
    let support = troupe_tools::sandbox::support();
    if !troupe_testkit::requirement(
        &format!("a usable Landlock ({support:?})"),
        support.is_available(),
    ) {
        return;
    }
    let (f, jobs) = with_jobs();
    let f = f.sandboxed(Sandbox::ReadOnly);
    let started = ok(f
        .call(
            "bash",
            json!({"command": "echo out; touch escaped", "run_in_background": true}),
        )
        .await);
    assert!(started.contains("sandbox: read-only"), "{started}");
    tokio::time::timeout(Duration::from_secs(20), jobs.wait_pending())
        .await
        .expect("it finishes");
    let text = &jobs.pending()[0].text;
    assert!(text.contains("exited with code 1"), "{text}");
    assert!(
        text.contains("out"),
        "its output still reaches the log: {text}"
    );
    assert!(
        !f.root().join("escaped").exists(),
        "the sandbox let it write"
    );
}

#[tokio::test]
async fn without_jobs_the_agent_is_told_to_run_it_in_the_foreground() {
    let f = Fixture::new();
    let refused = err(f
        .call(
            "bash",
            json!({"command": "true", "run_in_background": true}),
        )
        .await);
    assert!(refused.contains("not available"), "{refused}");
}
