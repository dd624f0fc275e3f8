//! `end_all`, what troupe runs when a signal tells it to stop: every running call's processes
//! end. Its own test binary, because it ends every tool process of the process it runs in.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, eventually, Fixture};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn end_all_ends_the_processes_of_running_calls() {
    troupe_tools::process::become_subreaper().unwrap();
    let f = Fixture::new();
    let pid_file = f.root().join("s.pid");
    let ctx = f.ctx.clone();
    let call = tokio::spawn(async move {
        let tool = troupe_tools::Registry::with_builtins().get("bash").unwrap();
        tool.call(
            json!({"command": "sleep 300 & echo $! > s.tmp && mv s.tmp s.pid; wait"}),
            &ctx,
        )
        .await
    });
    assert!(
        eventually(|| pid_file.exists()).await,
        "the call never started"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    tokio::task::spawn_blocking(troupe_tools::process::end_all)
        .await
        .unwrap();
    assert!(!alive(pid), "sleep {pid} survived end_all");
    let output = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call ends once its processes are killed")
        .unwrap();
    assert!(output.is_error, "{}", output.content);
}
