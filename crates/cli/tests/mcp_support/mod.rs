//! Helpers shared by the MCP tests.
#![allow(dead_code)]

use super::common::{run, troupe};
use std::path::Path;
use std::process::Output;
use troupe_testkit::{FakeServer, Recorded, TempWorkspace, Wire};

/// `troupe -p go --output-format json ARGS…` in `wire`, run to completion.
pub fn headless(ws: &TempWorkspace, server: &FakeServer, wire: Wire, args: &[&str]) -> Output {
    run(troupe(ws.path(), server, wire)
        .args(["-p", "go", "--output-format", "json"])
        .args(args))
}

/// The text of the last tool result, asserting whether it is an error.
#[track_caller]
pub fn last_result(req: &Recorded, error: bool) -> String {
    let (text, is_error) = req.last_tool_result().expect("a tool result");
    assert_eq!(is_error, error, "{text}");
    text
}

/// The pids of the server processes troupe started for `server`, from its log's marker lines.
pub fn started_pids(ws: &Path, server: &str) -> Vec<u32> {
    let log = std::fs::read_to_string(ws.join(format!(".troupe/logs/mcp/{server}.log")))
        .unwrap_or_default();
    log.lines()
        .filter_map(|l| l.split("(pid ").nth(1))
        .filter_map(|rest| rest.split(')').next())
        .map(|pid| pid.parse().unwrap())
        .collect()
}

/// Polls `check` until it holds, for at most ten seconds.
pub fn wait_until(check: impl Fn() -> bool) -> bool {
    troupe_testkit::eventually(std::time::Duration::from_secs(10), check)
}
