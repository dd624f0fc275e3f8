//! Every agent is composed alike: what the lead was started with — its setting sources, its
//! added directories — holds for its subagents and for its teammates, in the lead's process or
//! in their own. Each case here is one place the copies of the assembly used to drift.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// The lead calls a subagent, then spawns bob, then ends.
fn lead_delegates_and_spawns(server: &FakeServer, bob_prompt: &str) {
    server.set_fallback(|req| Step::reply(Reply::text(format!("ack from {}", req.agent))));
    server.script(
        "lead",
        [
            Step::tool(
                "task",
                json!({"description": "look", "prompt": "Look around."}),
            ),
            Step::tool(
                "spawn_teammate",
                json!({"name": "bob", "role": "helper", "prompt": bob_prompt}),
            ),
            Step::text("spawned"),
        ],
    );
}

#[test]
fn setting_sources_decide_every_agents_memory_and_settings() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        ws.write("CLAUDE.md", "PROJECT-MEMORY-MARK");
        ws.write(".home/.claude/CLAUDE.md", "USER-MEMORY-MARK");
        ws.write("victim.txt", "remove me");
        // A project setting that `--setting-sources user` leaves out.
        ws.write(
            ".claude/settings.json",
            r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
        );
        let server = FakeServer::start();
        lead_delegates_and_spawns(&server, "tidy up");
        server.script(
            "bob",
            [
                Step::tool("bash", json!({"command": "rm victim.txt"})),
                Step::text("bob tidied"),
            ],
        );
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "x",
            "--teammate-mode",
            mode,
            "--permission-mode",
            "bypassPermissions",
            "--setting-sources",
            "user",
        ]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        for agent in ["lead", "subagent", "bob"] {
            let requests = server.requests_for(agent);
            assert!(!requests.is_empty(), "{mode}: {agent} made no request");
            let system = requests[0].system();
            assert!(
                system.contains("USER-MEMORY-MARK"),
                "{mode}: {agent} reads the user's memory: {system}"
            );
            assert!(
                !system.contains("PROJECT-MEMORY-MARK"),
                "{mode}: {agent} does not read the project's memory: {system}"
            );
        }
        assert!(
            !ws.path().join("victim.txt").exists(),
            "{mode}: the project's deny rule was not read by bob"
        );
    }
}

#[test]
fn added_directories_reach_subagents_and_teammates_in_either_mode() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        let outside = tempfile::tempdir().unwrap();
        let dir = outside.path().canonicalize().unwrap();
        std::fs::write(dir.join("shared.txt"), "OUTSIDE-MARK").unwrap();
        let file = dir.join("shared.txt").display().to_string();
        let server = FakeServer::start();
        lead_delegates_and_spawns(&server, "read the shared file");
        for agent in ["subagent", "bob"] {
            server.script(
                agent,
                [
                    Step::tool("read_file", json!({"path": file})),
                    Step::text("read it"),
                ],
            );
        }
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "x",
            "--teammate-mode",
            mode,
            "--permission-mode",
            "bypassPermissions",
            "--add-dir",
            &dir.display().to_string(),
        ]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        for agent in ["subagent", "bob"] {
            let requests = server.requests_for(agent);
            let (content, is_error) = requests[1].last_tool_result().expect("a tool result");
            assert!(
                !is_error && content.contains("OUTSIDE-MARK"),
                "{mode}: {agent} reads the added directory: {content}"
            );
        }
    }
}

#[test]
fn subagents_get_the_mcp_servers_and_skills_their_definition_allows() {
    let ws = TempWorkspace::new();
    let log = ws.path().join("fixture.log");
    troupe_testkit::mcp::write_mcp_json(
        ws.path(),
        json!({"fx": troupe_testkit::mcp::fixture(&log)}),
    );
    ws.write(
        ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write CHANGELOG entries\n---\nNewest first.\n",
    );
    ws.write(
        ".claude/agents/helper.md",
        "---\nname: helper\ndescription: helps\n---\nYou help.\n",
    );
    ws.write(
        ".claude/agents/reader.md",
        "---\nname: reader\ndescription: reads\ntools: Read\n---\nYou read.\n",
    );
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("done")));
    server.script(
        "lead",
        [
            Step::reply(
                Reply::tool(
                    "task",
                    json!({"description": "help", "prompt": "Help.", "subagent_type": "helper"}),
                )
                .with_tool(
                    "task",
                    json!({"description": "read", "prompt": "Read.", "subagent_type": "reader"}),
                ),
            ),
            Step::text("delegated"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--permission-mode",
        "bypassPermissions",
        "--allowedTools",
        "mcp__fx",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let helper = server.requests_for("helper")[0].tool_names();
    assert!(
        helper.iter().any(|t| t.starts_with("mcp__fx__")),
        "the workspace's MCP servers: {helper:?}"
    );
    assert!(
        helper.contains(&"load_skill".to_string()),
        "the skills: {helper:?}"
    );
    assert!(server.requests_for("helper")[0]
        .system()
        .contains("changelog"));
    let reader = server.requests_for("reader")[0].tool_names();
    assert!(
        !reader
            .iter()
            .any(|t| t.starts_with("mcp__") || t == "load_skill"),
        "a definition's tools filter the extensions' tools too: {reader:?}"
    );
    assert!(reader.contains(&"read_file".to_string()), "{reader:?}");
}
