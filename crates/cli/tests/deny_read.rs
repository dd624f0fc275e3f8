//! A `Read` deny rule from a Claude Code project's settings keeps every tool from revealing the
//! file: read_file, grep and glob alike.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, stderr};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[test]
fn a_read_deny_rule_hides_the_file_from_every_reading_tool() {
    let ws = TempWorkspace::new();
    ws.write(".env", "API_TOKEN=hunter2-secret\n");
    ws.write("app.txt", "API_TOKEN is read from the environment\n");
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./.env)"]}}"#,
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("read_file", json!({"path": ".env"})),
            Step::tool("grep", json!({"pattern": "API_TOKEN"})),
            Step::tool("grep", json!({"pattern": "hunter2", "path": ".env"})),
            Step::tool("glob", json!({"pattern": "**/.env*"})),
            Step::text("done"),
        ],
    );
    let out = headless_in_mode(ws.path(), &server, "look", "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    for (i, r) in requests.iter().enumerate().skip(1) {
        let (text, _) = r.last_tool_result().unwrap();
        assert!(
            !text.contains("hunter2"),
            "call {i} revealed the secret: {text}"
        );
    }
    let (read, is_error) = requests[1].last_tool_result().unwrap();
    assert!(is_error && read.contains("Read(./.env)"), "{read}");
    let (grep_all, _) = requests[2].last_tool_result().unwrap();
    assert!(
        grep_all.contains("app.txt"),
        "other files are still searched: {grep_all}"
    );
}
