//! Every agent is composed alike: what the lead was started with — its setting sources, its
//! added directories — holds for its subagents and for its teammates, in the lead's process or
//! in their own. Each case here is one place the copies of the assembly used to drift.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{run, stderr, troupe};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// The lead calls a subagent, then spawns bob, then ends.
fn lead_delegates_and_spawns(server: &FakeServer, bob_prompt: &str) {
    common::ack_fallback(server);
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
    common::assert_stderr_has(&out, "version 99");
    common::assert_stderr_has(&out, "same troupe");
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

#[test]
fn a_teammate_made_from_an_agents_flag_definition_finds_it_in_either_mode() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        common::ack_fallback(&server);
        common::lead_spawns(
            &server,
            json!({"name": "bob", "role": "critic", "prompt": "critique", "agent": "critic"}),
        );
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "x",
            "--teammate-mode",
            mode,
            "--permission-mode",
            "bypassPermissions",
            "--agents",
            r#"{"critic": {"description": "Critiques", "prompt": "CRITIC-ROLE-MARK"}}"#,
        ]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        let requests = server.requests_for("bob");
        assert!(!requests.is_empty(), "{mode}: bob made no request");
        assert!(
            requests[0].system().contains("CRITIC-ROLE-MARK"),
            "{mode}: bob is made from the --agents definition: {}",
            requests[0].system()
        );
    }
}

/// Answers every agent but the lead's script: `rounds` reads of `fNN.txt`, one per call, then a
/// final text; each agent counts its own calls.
fn readers(rounds: usize) -> impl Fn(&troupe_testkit::Recorded) -> Step {
    let calls = std::sync::Mutex::new(std::collections::HashMap::<String, usize>::new());
    move |req| {
        let n = {
            let mut calls = calls.lock().unwrap();
            let count = calls.entry(req.agent.clone()).or_default();
            *count += 1;
            *count - 1
        };
        match n < rounds {
            true => Step::tool("read_file", json!({"path": format!("f{n:02}.txt")})),
            false => Step::text("read them all"),
        }
    }
}

#[test]
fn every_agent_compacts_against_the_leads_context_window_in_either_mode() {
    for mode in ["process", "in-process"] {
        let ws = TempWorkspace::new();
        // Ten files of about 7 KB: together past half of a 24,000-token window, far below
        // the default one.
        for i in 0..10 {
            let text: String = (0..130)
                .map(|l| format!("file {i:02} line {l:03}: the quick brown fox jumps over it\n"))
                .collect();
            ws.write(format!("f{i:02}.txt"), &text);
        }
        let server = FakeServer::start();
        lead_delegates_and_spawns(&server, "read the files");
        server.set_fallback(readers(10));
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "x",
            "--teammate-mode",
            mode,
            "--permission-mode",
            "bypassPermissions",
            "--context-window",
            "24000",
        ]));
        assert!(out.status.success(), "{mode}: stderr: {}", stderr(&out));
        for agent in ["subagent", "bob"] {
            let requests = server.requests_for(agent);
            let last = requests.last().expect("a request");
            assert!(
                last.body.to_string().contains("[compacted]"),
                "{mode}: {agent}'s older reads are stubs past half of the lead's window"
            );
        }
    }
}

#[test]
fn a_subagent_works_under_its_parents_mode_as_it_is_at_the_call() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("done")));
    server.script(
        "lead",
        [
            Step::tool(
                "task",
                json!({"description": "write", "prompt": "Write the note."}),
            ),
            Step::text("delegated"),
        ],
    );
    server.script(
        "subagent",
        [
            Step::tool(
                "write_file",
                json!({"path": "note.txt", "content": "written"}),
            ),
            Step::text("tried"),
        ],
    );
    // Started free to do anything, then switched to plan mode as the SDK does it.
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .args(["--verbose", "--permission-mode", "bypassPermissions"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_of = |kind: &str| loop {
        let line = lines.next().expect("a line").unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["type"] == kind {
            return value;
        }
    };
    let plan = json!({"type": "control_request", "request_id": "mode_1", "request": {
        "subtype": "set_permission_mode", "mode": "plan",
    }});
    writeln!(stdin, "{plan}").unwrap();
    let answer = next_of("control_response");
    assert_eq!(answer["response"]["subtype"], "success", "{answer}");
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "delegate"}});
    writeln!(stdin, "{prompt}").unwrap();
    next_of("result");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let requests = server.requests_for("subagent");
    let (content, is_error) = requests[1].last_tool_result().expect("a tool result");
    assert!(
        is_error,
        "the subagent is in plan mode, as its parent: {content}"
    );
    assert!(!ws.path().join("note.txt").exists());
}
