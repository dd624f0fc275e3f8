//! MCP configuration through the binary, against the real servers `.ci/run` installs: an
//! unusable entry warned in headless runs, `troupe mcp list`, HTTP headers with variables,
//! unknown servers in rules and `connect_mcp`, and deny rules over MCP tools.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod mcp_support;

use common::{result_json, run, stderr, subcommand, troupe};
use mcp_support::*;
use serde_json::{json, Value};
use troupe_testkit::{mcp, FakeServer, Reply, Step, TempWorkspace, Wire};

#[test]
fn an_unusable_entry_is_a_warning_in_headless_runs_worded_as_mcp_list_shows_it() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(ws.path(), json!({"bad": {"command": 5}}));
    let listed = subcommand(ws.path(), &["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let error = listed["servers"][0]["last_error"]
        .as_str()
        .unwrap()
        .to_string();
    common::assert_contains(&error, "`command` must be a non-empty string");
    let server = FakeServer::start();
    server.script("lead", [Step::text("fine")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("troupe: warning: ") && l.contains(&error)),
        "{err}"
    );
}

#[test]
fn mcp_list_shows_each_server_and_a_bad_entry_does_not_stop_the_others() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(
        ws.path(),
        json!({"fx": mcp::fixture(&log), "bad": {"command": 3}, "secret": {"command": "x", "env": {"K": "${TROUPE_TEST_NEVER_SET}"}}}),
    );
    let out = subcommand(ws.path(), &["mcp", "list", "--json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = listed["servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();
    let fx = by_name("fx");
    assert_eq!(fx["status"], "connected", "{fx}");
    assert_eq!(fx["tools"], 4);
    assert!(fx["last_error"].is_null());
    let bad = by_name("bad");
    assert_eq!(bad["status"], "failed");
    assert_eq!(bad["transport"], "unknown");
    let error = bad["last_error"].as_str().unwrap();
    assert!(error.starts_with("MCP server `bad` (in "), "{error}");
    common::assert_contains(error, ".mcp.json): `command` must be a non-empty string");
    let secret = by_name("secret");
    assert!(
        secret["last_error"]
            .as_str()
            .unwrap()
            .contains("${TROUPE_TEST_NEVER_SET} is not set"),
        "{secret}"
    );
    // The same as a table for people.
    let out = subcommand(ws.path(), &["mcp", "list"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let fx_row = table.lines().find(|l| l.starts_with("fx ")).unwrap();
    assert!(
        fx_row.contains("connected") && fx_row.contains("stdio") && fx_row.contains(" 4"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("bad ") && l.contains("failed")),
        "{table}"
    );
    // --mcp-config adds (and wins), --strict-mcp-config uses nothing else.
    let out = subcommand(
        ws.path(),
        &[
            "mcp",
            "list",
            "--json",
            "--strict-mcp-config",
            "--mcp-config",
            r#"{"mcpServers": {"only": {"command": "true"}}}"#,
        ],
    );
    let names = listed_names(&out);
    assert_eq!(names, ["only"]);
    // A file works the same; a missing one is an error naming it.
    ws.write(
        "extra.json",
        r#"{"mcpServers": {"extra": {"command": "true"}}}"#,
    );
    let out = subcommand(
        ws.path(),
        &["mcp", "list", "--json", "--mcp-config", "extra.json"],
    );
    let names = listed_names(&out);
    assert_eq!(names, ["bad", "extra", "fx", "secret"]);
    let out = subcommand(ws.path(), &["mcp", "list", "--mcp-config", "nowhere.json"]);
    assert!(!out.status.success());
    common::assert_stderr_has(&out, "--mcp-config nowhere.json: no such file");
}

#[test]
fn http_headers_are_sent_with_variables_expanded() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let capture = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let _ = stream.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&request).into_owned()
    });
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(
        ws.path(),
        json!({"remote": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${TROUPE_TEST_TOKEN}", "X-Team": "${TROUPE_TEST_TEAM:-blue}"}}}),
    );
    let out = common::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws.path())
            .env("TROUPE_TEST_TOKEN", "s3cret")
            .args([
                "mcp",
                "list",
                "--json",
                "--settings",
                r#"{"mcp_startup_timeout": 20}"#,
            ]),
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let request = capture.join().unwrap().to_ascii_lowercase();
    assert!(request.starts_with("post /mcp "), "{request}");
    common::assert_contains(&request, "authorization: bearer s3cret");
    assert!(request.contains("x-team: blue"), "{request}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["servers"][0]["status"], "failed");
    assert_eq!(listed["servers"][0]["transport"], "http");
    assert!(listed["servers"][0]["last_error"]
        .as_str()
        .unwrap()
        .contains("initialize at"));
}

#[test]
fn unknown_servers_in_flag_rules_and_connect_mcp_are_errors_and_in_settings_rules_warnings() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let server = FakeServer::start();
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__nope__x"],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "`mcp__nope__x` names the MCP server `nope`, which is not configured (configured: fx)"
        ),
        "{err}"
    );
    assert!(server.journal().is_empty(), "no model call was made");
    ws.write(
        ".troupe/settings.json",
        r#"{"permissions": {"deny": ["mcp__gone"]}}"#,
    );
    server.script("lead", [Step::text("ran")]);
    let out = headless(&ws, &server, Wire::Anthropic, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(
        &out,
        "settings permissions.deny: the deny rule `mcp__gone` names the MCP server `gone`, which is not configured (configured: fx); it matches nothing",
    );
    std::fs::remove_file(ws.path().join(".troupe/settings.json")).unwrap();
    server.script(
        "lead",
        [
            Step::tool("connect_mcp", json!({"name": "nope"})),
            Step::dynamic(|req| Reply::text(last_result(req, true))),
        ],
    );
    let out = headless(&ws, &server, Wire::Anthropic, &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        result_json(&out)["result"],
        "no MCP server named `nope` is configured; configured: fx"
    );
}

#[test]
fn deny_rules_hold_for_mcp_tools_and_headless_default_says_how_to_allow() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    mcp::write_mcp_json(ws.path(), json!({"fx": mcp::fixture(&log)}));
    let script = |server: &FakeServer| {
        server.script(
            "lead",
            [
                Step::tool("connect_mcp", json!({"name": "fx"})),
                Step::tool("mcp__fx__echo", json!({"text": "hi"})),
                Step::dynamic(|req| {
                    let (text, is_error) = req.last_tool_result().unwrap();
                    Reply::text(format!("{is_error}: {text}"))
                }),
            ],
        );
    };
    let server = FakeServer::start();
    for deny in ["mcp__fx__echo", "mcp__fx__*", "mcp__fx"] {
        script(&server);
        let out = headless(
            &ws,
            &server,
            Wire::Anthropic,
            &[
                "--permission-mode",
                "bypassPermissions",
                "--disallowedTools",
                deny,
            ],
        );
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        let result = result_json(&out)["result"].as_str().unwrap().to_string();
        assert!(
            result.starts_with(&format!(
                "true: mcp__fx__echo is denied by the permission rule `{deny}`"
            )),
            "{deny}: {result}"
        );
    }
    // A deny rule in the settings holds over an allow rule on the command line.
    ws.write(
        ".troupe/settings.json",
        r#"{"permissions": {"deny": ["mcp__fx__echo"]}}"#,
    );
    script(&server);
    let out = headless(
        &ws,
        &server,
        Wire::Anthropic,
        &["--allowedTools", "mcp__fx"],
    );
    let result = result_json(&out)["result"].as_str().unwrap().to_string();
    assert!(
        result.starts_with("true: mcp__fx__echo is denied"),
        "{result}"
    );
    std::fs::remove_file(ws.path().join(".troupe/settings.json")).unwrap();
    // Headless default mode: side effects unless a rule allows them; the refusal says how.
    script(&server);
    let out = headless(&ws, &server, Wire::Anthropic, &[]);
    let result = result_json(&out)["result"].as_str().unwrap().to_string();
    assert!(
        result.starts_with("true: mcp__fx__echo needs permission in default mode"),
        "{result}"
    );
    assert!(result.contains("--allowedTools mcp__fx__echo"), "{result}");
    common::assert_contains(
        &result,
        "--allowedTools mcp__fx for every tool of the MCP server fx",
    );
    // An ask rule makes even an allowed call ask, which headless cannot.
    ws.write(
        ".troupe/settings.json",
        r#"{"permissions": {"ask": ["mcp__fx__echo"], "allow": ["mcp__fx"]}}"#,
    );
    script(&server);
    let out = headless(&ws, &server, Wire::Anthropic, &[]);
    let result = result_json(&out)["result"].as_str().unwrap().to_string();
    common::assert_contains(&result, "the ask rule `mcp__fx__echo` matches");
}

/// The server names `troupe mcp list --json` printed.
fn listed_names(out: &std::process::Output) -> Vec<String> {
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}
