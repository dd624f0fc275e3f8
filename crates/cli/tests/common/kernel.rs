//! What the kernel sandbox tests share: whether the sandbox works here, and a headless run of
//! bash calls.

use super::{headless_go, result_json, script_bash_calls, subcommand};
use serde_json::Value;
use std::path::Path;
use troupe_testkit::{FakeServer, TempWorkspace};

/// Whether the sandbox (Landlock, seccomp, mount namespaces) works here; skips loudly, or fails
/// under CI.
pub fn kernel_sandbox() -> bool {
    let out = subcommand(Path::new("/"), &["sandbox", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let usable = report["landlock"]["available"] == true
        && report["seccomp"]["available"] == true
        && report["namespaces"]["available"] == true;
    if !usable {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must run the kernel sandbox tests: {report}"
        );
        eprintln!("skipping: the kernel sandbox is not usable here: {report}");
    }
    usable
}

pub fn python3() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have python3"
        );
        eprintln!("skipping: no python3");
    }
    found
}

/// Runs troupe headless on a model that calls bash with each of `commands`, with `args`, and
/// returns each call's result (text, is_error).
pub fn bash_calls(ws: &TempWorkspace, commands: &[&str], args: &[&str]) -> Vec<(String, bool)> {
    let server = FakeServer::start();
    script_bash_calls(&server, commands);
    let no_env: [(&str, &str); 0] = [];
    let out = headless_go(ws.path(), &server, args, &no_env);
    assert_eq!(result_json(&out)["result"], "done");
    server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result"))
        .collect()
}

pub fn read(ws: &TempWorkspace, path: &str) -> String {
    std::fs::read_to_string(ws.join(path)).unwrap_or_else(|e| format!("<{e}>"))
}
