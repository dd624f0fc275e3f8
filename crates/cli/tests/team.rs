//! Agent teams end to end through the binary: the course's s09 "Try it" session, unknown
//! recipients, a failing teammate, resume, and teammates as separate processes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{
    ack_fallback, headless_bypass, lead_spawns, repl, result_json, run, stderr, subcommand, troupe,
};
use serde_json::{json, Value};
use std::process::Stdio;
use troupe_testkit::{FakeServer, Fault, Reply, Step, TempWorkspace, Wire};

/// Every request of `agent` contains this text somewhere.
fn saw(server: &FakeServer, agent: &str, text: &str) -> bool {
    server
        .requests_for(agent)
        .iter()
        .any(|r| r.all_text().contains(text))
}

async fn roster(ws: &TempWorkspace) -> Value {
    common::team_roster(ws.path())
        .await
        .expect("the team has a roster")
}

fn member<'a>(roster: &'a Value, name: &str) -> &'a Value {
    roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not on roster: {roster}"))
}

#[tokio::test]
async fn s09_try_it_session() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::reply(
                Reply::tool("spawn_teammate", json!({"name": "alice", "role": "coder", "prompt": "Write the code, then tell bob it is ready."}))
                    .with_tool("spawn_teammate", json!({"name": "bob", "role": "tester", "prompt": "Wait for alice, then test."})),
            ),
            Step::tool("broadcast", json!({"content": "status update: phase 1 complete"})),
            Step::tool("read_inbox", json!({})),
            Step::text("the team is at work"),
        ],
    );
    server.script(
        "alice",
        [
            Step::tool(
                "send_message",
                json!({"to": "bob", "content": "hello bob, the code is ready"}),
            ),
            Step::text("alice: code written, bob told"),
        ],
    );
    server.script("bob", [Step::text("bob: standing by")]);
    let out = headless_bypass(
        ws.path(),
        &server,
        "Spawn alice (coder) and bob (tester); have alice message bob; broadcast; check the inbox.",
        &[],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "success", "{result}");

    // alice's message and the broadcast reached bob; the broadcast reached alice.
    assert!(saw(&server, "bob", "hello bob, the code is ready"));
    assert!(saw(&server, "bob", "status update: phase 1 complete"));
    assert!(saw(&server, "alice", "status update: phase 1 complete"));
    // Each teammate's final text reached the lead without anyone sending it by hand.
    assert!(saw(&server, "lead", "alice: code written, bob told"));
    assert!(saw(&server, "lead", "bob: standing by") || saw(&server, "lead", "ack from bob"));
    // The teammates run with their own identity.
    assert!(server.requests_for("alice")[0]
        .system()
        .contains("You are 'alice', a coder"));

    let roster = roster(&ws).await;
    for (name, role) in [("alice", "coder"), ("bob", "tester")] {
        let m = member(&roster, name);
        assert_eq!(m["role"], role);
        assert_eq!(m["status"], "idle", "{m}");
        assert_eq!(m["epoch"], 1);
    }
    let teammates = result["teammates"]
        .as_array()
        .expect("the result lists the teammates");
    assert_eq!(teammates.len(), 2);
    assert!(
        teammates.iter().all(|t| t["last_report"].is_string()),
        "{teammates:?}"
    );

    // From another terminal: the roster, and the log.
    let status = subcommand(ws.path(), &["team", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("alice")
            && text.contains("coder")
            && text.contains("bob")
            && text.contains("tester")
            && text.contains("idle"),
        "{text}"
    );
    let log = subcommand(ws.path(), &["team", "log"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains("alice") && log.contains("member_spawned") && log.contains("status_changed"),
        "{log}"
    );

    // The REPL's /team shows the same roster.
    let out = repl(ws.path(), &server, &[], "/team\n/exit\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("alice") && text.contains("tester"),
        "stdout: {text}\nstderr: {}",
        stderr(&out)
    );
}

#[test]
fn unknown_recipient_is_an_error_listing_the_members() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Say hi to bob."}),
            ),
            Step::tool(
                "send_message",
                json!({"to": "bobby", "content": "are you there?"}),
            ),
            Step::dynamic(|req| {
                let (text, is_error) = req.last_tool_result().unwrap();
                assert!(is_error);
                Reply::text(format!("lead saw: {text}"))
            }),
        ],
    );
    server.script(
        "alice",
        [
            Step::tool("send_message", json!({"to": "bob", "content": "hi"})),
            Step::dynamic(|req| {
                let (text, is_error) = req.last_tool_result().unwrap();
                assert!(is_error);
                Reply::text(format!("alice saw: {text}"))
            }),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "x", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lead_saw = server.requests_for("lead").iter().find_map(|r| {
        let t = r.all_text();
        t.contains("no teammate named 'bobby'").then_some(t)
    });
    let lead_saw = lead_saw.expect("the lead got the unknown-recipient error");
    assert!(
        lead_saw.contains("alice (coder"),
        "the error lists the members"
    );
    assert!(saw(&server, "alice", "no teammate named 'bob'"));
    // No phantom inbox was created.
    assert!(!ws
        .path()
        .join(".troupe/teams/default/inbox/bob.jsonl")
        .exists());
    assert!(!ws
        .path()
        .join(".troupe/teams/default/inbox/bobby.jsonl")
        .exists());
}

#[tokio::test]
async fn a_failing_teammate_is_reported_and_the_others_finish() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::reply(
                Reply::tool(
                    "spawn_teammate",
                    json!({"name": "carol", "role": "coder", "prompt": "work"}),
                )
                .with_tool(
                    "spawn_teammate",
                    json!({"name": "dave", "role": "coder", "prompt": "work"}),
                ),
            ),
            Step::text("spawned"),
        ],
    );
    server.script(
        "carol",
        [Step::fault(Fault::Status {
            code: 400,
            retry_after: None,
            body: "{\"error\":{\"message\":\"bad request for carol\"}}".into(),
        })],
    );
    server.script(
        "dave",
        [
            Step::tool("write_file", json!({"path": "dave.txt", "content": "done"})),
            Step::text("dave finished"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "x", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let roster = roster(&ws).await;
    assert_eq!(member(&roster, "carol")["status"], "failed");
    assert_eq!(member(&roster, "dave")["status"], "idle");
    assert_eq!(ws.read("dave.txt"), "done");
    assert!(saw(&server, "lead", "teammate 'carol' failed"));
    assert!(saw(&server, "lead", "dave finished"));
}

#[test]
fn continue_respawns_teammates_with_their_transcripts_and_unread_mail() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "remember the word pineapple"}),
    );
    server.script("alice", [Step::text("noted pineapple")]);
    let first = headless_bypass(ws.path(), &server, "x", &[]);
    assert!(first.status.success(), "stderr: {}", stderr(&first));

    // A person writes to alice while no lead runs: the mail waits in her inbox.
    let send = subcommand(ws.path(), &["team", "send", "alice", "what was the word?"]);
    assert!(send.status.success(), "{}", stderr(&send));
    let inbox = subcommand(ws.path(), &["team", "inbox", "alice"]);
    assert!(String::from_utf8_lossy(&inbox.stdout).contains("what was the word?"));

    server.script(
        "alice",
        [Step::dynamic(|req| {
            let text = req.all_text();
            assert!(
                text.contains("remember the word pineapple"),
                "alice's transcript was restored"
            );
            assert!(
                text.contains("what was the word?"),
                "her unread mail was delivered"
            );
            Reply::text("the word was pineapple")
        })],
    );
    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "carry on",
        "--continue",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    assert!(saw(&server, "lead", "the word was pineapple"));
    // Sending to a name that is not on the roster from the terminal is an error too.
    let bad = subcommand(ws.path(), &["team", "send", "zed", "hi"]);
    assert_eq!(bad.status.code(), Some(1));
    common::assert_stderr_has(&bad, "no teammate named 'zed'");
    common::assert_stderr_has(&bad, "alice");
}

#[tokio::test]
async fn teammates_can_run_as_their_own_processes() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "make a file"}),
    );
    server.script(
        "alice",
        [
            Step::tool(
                "write_file",
                json!({"path": "from-process.txt", "content": "hi"}),
            ),
            Step::text("alice wrote the file"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "x", &["--teammate-mode", "process"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(ws.read("from-process.txt"), "hi");
    assert!(saw(&server, "lead", "alice wrote the file"));
    let roster = roster(&ws).await;
    let alice = member(&roster, "alice");
    let pid = alice["pid"]
        .as_u64()
        .expect("process-mode members record their pid");
    assert_ne!(pid, 0);
}

#[test]
fn headless_run_reports_a_team_that_does_not_settle_in_time() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    ack_fallback(&server);
    lead_spawns(
        &server,
        json!({"name": "slow", "role": "coder", "prompt": "take your time"}),
    );
    server.script(
        "slow",
        [Step::delay(
            std::time::Duration::from_secs(20),
            Step::text("finally"),
        )],
    );
    let out = headless_bypass(ws.path(), &server, "x", &["--team-timeout", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "error_during_execution");
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("did not settle") && text.contains("slow"),
        "{text}"
    );
}

#[test]
fn interactive_lead_is_woken_by_mail_while_waiting_at_the_prompt() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "spawn_teammate",
            json!({"name": "alice", "role": "coder", "prompt": "report back"}),
        ),
        Step::text("spawned alice"),
        Step::dynamic(|req| {
            assert!(req.all_text().contains("alice's report"));
            Reply::text("lead read alice's report")
        }),
    ]);
    server.script(
        "alice",
        [Step::delay(
            std::time::Duration::from_millis(300),
            Step::text("alice's report"),
        )],
    );
    let mut repl = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["--permission-mode", "bypassPermissions"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = repl.stdin.take().unwrap();
    stdin.write_all(b"spawn alice\n").unwrap();
    stdin.flush().unwrap();
    // No further input: the lead's third model call can only come from mail waking it.
    troupe_testkit::wait_until(
        "the lead to be woken by alice's mail",
        std::time::Duration::from_secs(30),
        || server.requests_for("lead").len() >= 3,
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    stdin.write_all(b"/team\n/exit\n").unwrap();
    drop(stdin);
    let out = repl.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("lead read alice's report"),
        "stdout: {text}\nstderr: {}",
        stderr(&out)
    );
    assert!(
        text.contains("alice's report"),
        "the mail was shown as it arrived: {text}"
    );
}

#[tokio::test]
async fn every_teammate_obeys_the_deny_rules_of_the_lead_that_spawned_it() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        ws.write("victim.txt", "keep me");
        let server = FakeServer::start();
        ack_fallback(&server);
        // A role that starts like a flag must still arrive as the role.
        lead_spawns(
            &server,
            json!({"name": "bob", "role": "-x tidier", "prompt": "tidy up"}),
        );
        server.script(
            "bob",
            [
                Step::tool("bash", json!({"command": "rm victim.txt"})),
                Step::text("bob tried"),
            ],
        );
        let out = headless_bypass(
            ws.path(),
            &server,
            "x",
            &[
                "--teammate-mode",
                mode,
                "--disallowedTools",
                "Bash(rm:*)",
                "--allowedTools",
                "Bash(git status)",
            ],
        );
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        assert_eq!(
            ws.read("victim.txt"),
            "keep me",
            "{mode}: the file survives"
        );
        let bob = server.requests_for("bob");
        assert!(bob.len() >= 2, "{mode}: bob saw the result of his call");
        let (content, is_error) = bob[1].last_tool_result().expect("a tool result");
        assert!(
            is_error && content.contains("Bash(rm:*)"),
            "{mode}: the refusal names the rule: {content}"
        );
        assert_eq!(
            member(&roster(&ws).await, "bob")["role"],
            "-x tidier",
            "{mode}"
        );
    }
}
