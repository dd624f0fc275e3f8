//! Teammates shaped at spawn through the binary: made from an agent definition
//! (`spawn_teammate{agent}`: its prompt, tools, model and a stricter permission mode) and
//! restricted to some tools and MCP servers (`tools`, `mcp_servers`), against the real reference
//! servers — in process, as their own processes, and again after `--continue`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{ack_fallback, headless_bypass, lead_spawns, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{mcp, FakeServer, Recorded, Reply, Step, TempWorkspace, Wire};

fn define(ws: &std::path::Path, name: &str, extra: &str) {
    let dir = ws.join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\nname: {name}\ndescription: the {name} agent\n{extra}---\nYou are the {name} specialist.\n"),
    )
    .unwrap();
}

async fn roster_member(ws: &TempWorkspace, name: &str) -> Value {
    let roster: Value = common::team_roster(ws.path())
        .await
        .expect("the team has a roster");
    roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} not on the roster: {roster}"))
}

/// `troupe -p PROMPT --continue` in bypass mode, run to completion.
fn continued(ws: &TempWorkspace, server: &FakeServer, extra: &[&str]) -> std::process::Output {
    run(troupe(ws.path(), server, Wire::Anthropic)
        .args(["-p", "carry on", "--continue", "--output-format", "json"])
        .args(["--permission-mode", "bypassPermissions"])
        .args(extra))
}

/// Asserts that `req` offered exactly what a teammate restricted to `allowed` may use: each of
/// `allowed`, its team tools, and nothing of `forbidden` (names or `prefix*`).
#[track_caller]
fn offered_only(req: &Recorded, allowed: &[&str], forbidden: &[&str]) {
    let tools = req.tool_names();
    for name in allowed.iter().chain(&["send_message", "read_inbox"]) {
        assert!(tools.iter().any(|t| t == name), "{name} missing: {tools:?}");
    }
    for pattern in forbidden {
        let hit = match pattern.strip_suffix('*') {
            Some(prefix) => tools.iter().any(|t| t.starts_with(prefix)),
            None => tools.iter().any(|t| t == pattern),
        };
        assert!(!hit, "{pattern} was offered: {tools:?}");
    }
}

const BUILT_INS: [&str; 8] = [
    "bash",
    "write_file",
    "edit_file",
    "glob",
    "todo_write",
    "compact",
    "task",
    "load_skill",
];

#[tokio::test]
async fn a_teammate_from_an_agent_definition_has_its_prompt_tools_and_model_after_continue_too() {
    let ws = TempWorkspace::new();
    define(
        ws.path(),
        "reviewer",
        "tools: Read, Grep\nmodel: review-model\n",
    );
    let server = FakeServer::start();
    ack_fallback(&server);
    lead_spawns(
        &server,
        json!({"name": "rev", "role": "reviewer", "prompt": "review the code", "agent": "reviewer"}),
    );
    server.script(
        "rev",
        [
            // Not offered, so not callable either.
            Step::tool("bash", json!({"command": "touch hacked"})),
            Step::text("rev: reviewed"),
        ],
    );
    let first = headless_bypass(ws.path(), &server, "review", &[]);
    assert!(first.status.success(), "stderr: {}", stderr(&first));
    assert!(!ws.path().join("hacked").exists());
    let rev = server.requests_for("rev");
    let system = rev[0].system();
    assert!(system.contains("You are 'rev', a reviewer"), "{system}");
    common::assert_contains(&system, "You are the reviewer specialist.");
    assert_eq!(rev[0].body["model"], "review-model");
    offered_only(&rev[0], &["read_file", "grep"], &BUILT_INS);
    let (text, is_error) = rev[1].last_tool_result().unwrap();
    assert!(is_error && text.contains("unknown tool 'bash'"), "{text}");
    let member = roster_member(&ws, "rev").await;
    assert_eq!(member["agent"], "reviewer", "{member}");
    assert_eq!(member["model"], "review-model", "{member}");
    // The spawn tool lists the definitions it can make teammates from.
    let lead = &server.requests_for("lead")[0];
    let spawn = lead.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "spawn_teammate")
        .unwrap();
    assert!(
        spawn["description"]
            .as_str()
            .unwrap()
            .contains("- reviewer: the reviewer agent"),
        "{spawn}"
    );

    // Respawned by --continue: made the same way, from the roster.
    let before = rev.len();
    server.script(
        "lead",
        [
            Step::tool("send_message", json!({"to": "rev", "content": "once more"})),
            Step::text("sent"),
        ],
    );
    server.script("rev", [Step::text("rev: again")]);
    let second = continued(&ws, &server, &[]);
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    let rev = server.requests_for("rev");
    assert!(rev.len() > before, "rev worked again");
    let again = rev.last().unwrap();
    assert!(again.all_text().contains("once more"));
    assert!(again.system().contains("You are the reviewer specialist."));
    assert_eq!(again.body["model"], "review-model");
    offered_only(again, &["read_file", "grep"], &BUILT_INS);
}

#[test]
fn a_definitions_permission_mode_only_tightens() {
    let ws = TempWorkspace::new();
    define(ws.path(), "auditor", "permissionMode: plan\n");
    define(ws.path(), "loose", "permissionMode: bypassPermissions\n");
    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::reply(
                Reply::tool(
                    "spawn_teammate",
                    json!({"name": "aud", "role": "auditor", "prompt": "audit", "agent": "auditor"}),
                )
                .with_tool(
                    "spawn_teammate",
                    json!({"name": "lo", "role": "helper", "prompt": "edit", "agent": "loose"}),
                ),
            ),
            Step::text("spawned"),
        ],
    );
    server.script(
        "aud",
        [
            Step::tool("write_file", json!({"path": "audited.txt", "content": "x"})),
            Step::text("aud: done"),
        ],
    );
    server.script(
        "lo",
        [
            Step::tool("bash", json!({"command": "touch loose"})),
            Step::text("lo: done"),
        ],
    );
    // The team runs in acceptEdits (and what it would ask about is refused headless): the
    // auditor's plan mode is stricter and holds, so even an edit is refused; the loose
    // definition's bypassPermissions is not, so its command is refused as acceptEdits says.
    let out = common::headless_in_mode(
        ws.path(),
        &server,
        "go",
        "acceptEdits",
        &["--teammate-permissions", "user"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!ws.path().join("audited.txt").exists());
    let (text, is_error) = server.requests_for("aud")[1].last_tool_result().unwrap();
    assert!(is_error, "{text}");
    assert!(!ws.path().join("loose").exists());
    let (text, is_error) = server.requests_for("lo")[1].last_tool_result().unwrap();
    assert!(is_error, "{text}");
}

#[test]
fn unknown_definitions_and_servers_are_errors_listing_the_known_ones() {
    let ws = TempWorkspace::new();
    define(ws.path(), "reviewer", "");
    mcp::write_mcp_json(ws.path(), json!({"time": mcp::time()}));
    let server = common::lead_server([
        Step::tool(
            "spawn_teammate",
            json!({"name": "a", "role": "x", "prompt": "y", "agent": "writer"}),
        ),
        Step::tool(
            "spawn_teammate",
            json!({"name": "b", "role": "x", "prompt": "y", "mcp_servers": ["nope"]}),
        ),
        Step::text("done"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lead = server.requests_for("lead");
    let (text, is_error) = lead[1].last_tool_result().unwrap();
    assert!(
        is_error
            && text.contains("no agent definition named 'writer'")
            && text.contains("reviewer"),
        "{text}"
    );
    let (text, is_error) = lead[2].last_tool_result().unwrap();
    assert!(
        is_error && text.contains("no MCP server named 'nope'") && text.contains("time"),
        "{text}"
    );
    assert!(server.requests_for("a").is_empty() && server.requests_for("b").is_empty());
}

#[tokio::test]
async fn tool_and_server_restrictions_hold_for_mcp_tools_in_process_and_after_continue() {
    let ws = TempWorkspace::new();
    mcp::write_mcp_json(
        ws.path(),
        json!({"time": mcp::time(), "everything": mcp::everything()}),
    );
    let server = FakeServer::start();
    ack_fallback(&server);
    let connect_both = || {
        Step::reply(
            Reply::tool("connect_mcp", json!({"name": "time"}))
                .with_tool("connect_mcp", json!({"name": "everything"})),
        )
    };
    server.script(
        "lead",
        [
            // connect_mcp waits for start-up: the teammates' first round has the servers' tools.
            connect_both(),
            Step::reply(
                Reply::tool(
                    "spawn_teammate",
                    json!({"name": "clock", "role": "timekeeper", "prompt": "what time is it?", "mcp_servers": ["time"]}),
                )
                .with_tool(
                    "spawn_teammate",
                    json!({"name": "echoer", "role": "echo", "prompt": "echo hi", "tools": ["Read", "mcp__everything__echo"]}),
                ),
            ),
            Step::text("spawned"),
        ],
    );
    server.script(
        "clock",
        [
            Step::tool("mcp__time__get_current_time", json!({"timezone": "UTC"})),
            Step::text("clock: done"),
        ],
    );
    server.script(
        "echoer",
        [
            Step::tool("mcp__time__get_current_time", json!({"timezone": "UTC"})),
            Step::tool("mcp__everything__echo", json!({"message": "hi there"})),
            Step::text("echoer: done"),
        ],
    );
    let first = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(first.status.success(), "stderr: {}", stderr(&first));
    let clock = server.requests_for("clock");
    offered_only(
        &clock[0],
        &[
            "bash",
            "read_file",
            "connect_mcp",
            "mcp__time__get_current_time",
        ],
        &["mcp__everything__*"],
    );
    let (text, is_error) = clock[1].last_tool_result().unwrap();
    assert!(!is_error && text.contains("UTC"), "{text}");
    let echoer = server.requests_for("echoer");
    offered_only(
        &echoer[0],
        &["read_file", "mcp__everything__echo"],
        &[
            "mcp__time__*",
            "mcp__everything__get-sum",
            "connect_mcp",
            "bash",
        ],
    );
    let (text, is_error) = echoer[1].last_tool_result().unwrap();
    assert!(
        is_error && text.contains("unknown tool 'mcp__time__get_current_time'"),
        "{text}"
    );
    let (text, is_error) = echoer[2].last_tool_result().unwrap();
    assert!(!is_error && text.contains("hi there"), "{text}");
    let member = roster_member(&ws, "echoer").await;
    assert_eq!(
        member["tools"],
        json!(["read_file", "mcp__everything__echo"]),
        "{member}"
    );

    // --continue respawns both from the roster, restricted as before.
    let (clocks, echoes) = (clock.len(), echoer.len());
    server.script(
        "lead",
        [
            connect_both(),
            Step::reply(
                Reply::tool("send_message", json!({"to": "clock", "content": "again"}))
                    .with_tool("send_message", json!({"to": "echoer", "content": "again"})),
            ),
            Step::text("sent"),
        ],
    );
    server.script("clock", [Step::text("clock: again")]);
    server.script("echoer", [Step::text("echoer: again")]);
    let second = continued(&ws, &server, &[]);
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    let clock = server.requests_for("clock");
    assert!(clock.len() > clocks);
    offered_only(
        clock.last().unwrap(),
        &["bash", "mcp__time__get_current_time"],
        &["mcp__everything__*"],
    );
    let echoer = server.requests_for("echoer");
    assert!(echoer.len() > echoes);
    offered_only(
        echoer.last().unwrap(),
        &["read_file", "mcp__everything__echo"],
        &["mcp__time__*", "mcp__everything__get-sum", "bash"],
    );
}

#[tokio::test]
async fn a_process_mode_teammate_keeps_its_definition_and_server_restriction() {
    let ws = TempWorkspace::new();
    define(
        ws.path(),
        "reviewer",
        "tools: Read, Grep, connect_mcp, mcp__*\n",
    );
    mcp::write_mcp_json(
        ws.path(),
        json!({"time": mcp::time(), "everything": mcp::everything()}),
    );
    let server = FakeServer::start();
    ack_fallback(&server);
    lead_spawns(
        &server,
        json!({"name": "rev", "role": "reviewer", "prompt": "check the time", "agent": "reviewer", "mcp_servers": ["time"]}),
    );
    server.script(
        "rev",
        [
            // Its own process connects its own servers; connecting is not using.
            Step::reply(
                Reply::tool("connect_mcp", json!({"name": "time"}))
                    .with_tool("connect_mcp", json!({"name": "everything"})),
            ),
            Step::tool("mcp__time__get_current_time", json!({"timezone": "UTC"})),
            Step::text("rev: done"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &["--teammate-mode", "process"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(roster_member(&ws, "rev").await["pid"].as_u64().is_some());
    let rev = server.requests_for("rev");
    assert!(rev[0].system().contains("You are the reviewer specialist."));
    offered_only(
        &rev[1],
        &[
            "read_file",
            "grep",
            "connect_mcp",
            "mcp__time__get_current_time",
        ],
        &["mcp__everything__*", "bash", "write_file"],
    );
    let (text, is_error) = rev[2].last_tool_result().unwrap();
    assert!(!is_error && text.contains("UTC"), "{text}");

    // --continue starts its process again, made from the roster the same way.
    let before = rev.len();
    server.script(
        "lead",
        [
            Step::tool("send_message", json!({"to": "rev", "content": "once more"})),
            Step::text("sent"),
        ],
    );
    server.script(
        "rev",
        [
            Step::reply(
                Reply::tool("connect_mcp", json!({"name": "time"}))
                    .with_tool("connect_mcp", json!({"name": "everything"})),
            ),
            Step::text("rev: again"),
        ],
    );
    let second = continued(&ws, &server, &["--teammate-mode", "process"]);
    assert!(second.status.success(), "stderr: {}", stderr(&second));
    let rev = server.requests_for("rev");
    assert!(rev.len() >= before + 2, "rev worked again");
    let again = rev.last().unwrap();
    assert!(again.system().contains("You are the reviewer specialist."));
    offered_only(
        again,
        &[
            "read_file",
            "grep",
            "connect_mcp",
            "mcp__time__get_current_time",
        ],
        &["mcp__everything__*", "bash", "write_file"],
    );
}

#[test]
fn teammates_read_the_users_memory_and_skills_in_process_and_as_processes() {
    for mode in ["in-process", "process"] {
        let ws = TempWorkspace::new();
        // The tests' HOME is the workspace's `.home`.
        ws.write(
            ".home/.claude/CLAUDE.md",
            "Sign every report with a smiley.\n",
        );
        ws.write(
            ".home/.troupe/skills/greet/SKILL.md",
            "---\nname: greet\ndescription: Greet people warmly\n---\nSay hello.\n",
        );
        let server = FakeServer::start();
        ack_fallback(&server);
        lead_spawns(
            &server,
            json!({"name": "mate", "role": "helper", "prompt": "say hi"}),
        );
        server.script("mate", [Step::text("hi :)")]);
        let out = headless_bypass(ws.path(), &server, "go", &["--teammate-mode", mode]);
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let mate = server.requests_for("mate");
        let system = mate[0].system();
        assert!(
            system.contains("Sign every report with a smiley."),
            "{mode}: {system}"
        );
        assert!(
            system.contains("- greet: Greet people warmly"),
            "{mode}: {system}"
        );
        assert!(mate[0].tool_names().contains(&"load_skill".to_string()));
    }
}
