//! Every agent is composed alike: what the lead was started with — its setting sources, its
//! added directories — holds for its subagents and for its teammates, in the lead's process or
//! in their own. Each case here is one place the copies of the assembly used to drift.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use serde_json::{json, Value};
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

#[test]
fn the_settings_env_reaches_every_agents_model_client_and_commands_in_either_mode() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        lead_delegates_and_spawns(&server, "mark it");
        server.script(
            "bob",
            [
                Step::tool(
                    "bash",
                    json!({"command": "echo \"$TROUPE_MARK\" > mark.txt"}),
                ),
                Step::text("marked"),
            ],
        );
        // The model's endpoint is named only by the settings' env.
        let settings = json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "env": {"ANTHROPIC_BASE_URL": server.url(), "TROUPE_MARK": "from-settings"},
        })
        .to_string();
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .env_remove("ANTHROPIC_BASE_URL")
            .args(["-p", "x", "--teammate-mode", mode, "--settings", &settings]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        for agent in ["lead", "subagent", "bob"] {
            assert!(
                !server.requests_for(agent).is_empty(),
                "{mode}: {agent} reached the model the settings name"
            );
        }
        assert_eq!(ws.read("mark.txt").trim(), "from-settings", "{mode}");
    }
}

#[test]
fn a_teammate_starts_from_a_launch_file_and_a_foreign_one_is_refused() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("reviewed")));
    let launch = |version: u32| {
        json!({
            "version": version, "team": "default", "name": "carol", "role": "reviewer",
            "prompt": "review the parser", "workspace": ws.path(), "model": "claude-from-launch",
            "provider": "anthropic", "max_tokens": 1000, "permission_mode": "bypassPermissions",
            "allow_rules": [], "ask_rules": [], "deny_rules": ["Bash(rm:*)"], "options": {},
        })
        .to_string()
    };
    ws.write("old.json", launch(99));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "teammate",
        "--config-file",
        "old.json",
    ]));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("version 99") && stderr(&out).contains("same troupe"),
        "{}",
        stderr(&out)
    );
    // Written by hand, without a lease: the teammate takes its own.
    ws.write("carol.json", launch(troupe_team::launch::VERSION));
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["teammate", "--config-file", "carol.json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while server.requests_for("carol").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "carol never called the model"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    let first = &server.requests_for("carol")[0];
    assert_eq!(first.model(), "claude-from-launch");
    assert!(first.all_text().contains("review the parser"));
    assert!(first.system().contains("reviewer"), "{}", first.system());
}

#[test]
fn every_agent_thinks_as_the_lead_was_told_with_its_output_limit_in_either_mode() {
    // (teammate mode, model, reasoning flags, the `thinking` and `output_config` every request
    // carries): adaptive thinking at an effort on a newer model, a budget on an older one.
    let cases = [
        (
            "process",
            "claude-opus-4-6",
            ["--effort", "low"],
            json!({"type": "adaptive"}),
            json!({"effort": "low"}),
        ),
        (
            "in-process",
            "claude-opus-4-6",
            ["--effort", "low"],
            json!({"type": "adaptive"}),
            json!({"effort": "low"}),
        ),
        (
            "process",
            "claude-sonnet-4-5",
            ["--max-thinking-tokens", "2000"],
            json!({"type": "enabled", "budget_tokens": 2000}),
            Value::Null,
        ),
    ];
    for (mode, model, reasoning, thinking, output_config) in cases {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        lead_delegates_and_spawns(&server, "think it over");
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .env_remove("MAX_THINKING_TOKENS")
            .env_remove("CLAUDE_CODE_EFFORT_LEVEL")
            .args(["-p", "x", "--teammate-mode", mode])
            .args(["--permission-mode", "bypassPermissions"])
            .args(["--model", model, "--max-tokens", "3000"])
            .args(reasoning));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        for agent in ["lead", "subagent", "bob"] {
            let requests = server.requests_for(agent);
            assert!(!requests.is_empty(), "{mode}: {agent} made no request");
            for request in &requests {
                let body = &request.body;
                let case = format!("{mode} {model} {reasoning:?}: {agent}");
                assert_eq!(request.model(), model, "{case}: the lead's model");
                assert_eq!(body["thinking"], thinking, "{case}: the lead's thinking");
                assert_eq!(
                    body.get("output_config").cloned().unwrap_or(Value::Null),
                    output_config,
                    "{case}: the lead's effort"
                );
                assert_eq!(body["max_tokens"], 3000, "{case}: the lead's --max-tokens");
            }
        }
    }
}

#[test]
fn subagents_run_the_workspaces_hooks_whatever_tools_their_definition_allows() {
    let ws = TempWorkspace::new();
    ws.write("notes.txt", "NOTES-MARK");
    ws.write(
        ".claude/agents/reader.md",
        "---\nname: reader\ndescription: reads\ntools: Read\n---\nYou read.\n",
    );
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("done")));
    server.script(
        "lead",
        [
            Step::tool(
                "task",
                json!({"description": "read", "prompt": "Read.", "subagent_type": "reader"}),
            ),
            Step::text("delegated"),
        ],
    );
    server.script(
        "reader",
        [
            Step::tool("read_file", json!({"path": "notes.txt"})),
            Step::text("read"),
        ],
    );
    let settings = json!({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {
            "PreToolUse": [{"matcher": "Read", "hooks": [
                {"type": "command", "command": "echo HOOK-REFUSED-READ >&2; exit 2"}
            ]}],
            "SubagentStop": [{"hooks": [
                {"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/subagent-stop.json\""}
            ]}],
        },
    })
    .to_string();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "x", "--settings", &settings]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests_for("reader");
    let (content, is_error) = requests[1].last_tool_result().expect("a tool result");
    assert!(
        is_error && content.contains("HOOK-REFUSED-READ") && !content.contains("NOTES-MARK"),
        "the PreToolUse hook refused the subagent's read: {content}"
    );
    let stop: Value = serde_json::from_str(&ws.read("subagent-stop.json")).unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop", "{stop}");
}
