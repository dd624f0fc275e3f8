//! The TypeScript Claude Agent SDK (npm `@anthropic-ai/claude-agent-sdk`, installed under
//! `.ci/node` by `scripts/test-deps.sh`) drives the real troupe binary unchanged, with
//! `pathToClaudeCodeExecutable` pointing at it (`tests/sdk/drive.mjs`): a tool loop, a
//! PreToolUse hook callback that denies, an in-process `createSdkMcpServer` tool, the
//! `initialize` fields this SDK sends (`systemPrompt` in parts, the preset's
//! `appendSystemPrompt`, `agents`), `allowDangerouslySkipPermissions` with the bypass mode,
//! agents, a project slash command, a deny rule's `system/permission_denied`, `canUseTool`
//! answers and the thinking options. Without node or the package the tests say so and pass,
//! except under `CI=true`, where they fail naming the install step.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
#[path = "sdk/model.rs"]
mod sdk_model;

use sdk_model::model;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use troupe_testkit::{FakeServer, TempWorkspace};

/// The pinned package, as `scripts/test-deps.sh` installs it.
const PACKAGE: &str = "@anthropic-ai/claude-agent-sdk@0.3.332";

/// The folder holding `node_modules` with the SDK, or `None` (after saying why) when it is
/// missing outside CI. Under `CI=true` a missing SDK fails: CI must run these tests.
fn sdk_dir() -> Option<PathBuf> {
    let dir = troupe_testkit::mcp::node_dir();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let package = dir.join("node_modules/@anthropic-ai/claude-agent-sdk/package.json");
    let missing = match (node, package.exists()) {
        (true, true) => return Some(dir),
        (false, _) => "node is not on PATH".to_string(),
        (true, false) => format!("{} is missing", package.display()),
    };
    let install = format!(
        "run scripts/test-deps.sh (npm install --prefix .ci/node --omit=optional {PACKAGE})"
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the TypeScript Agent SDK tests cannot run: {missing}; {install}"
    );
    eprintln!("skipped: the TypeScript Agent SDK tests need it ({missing}); {install}");
    None
}

/// Runs one scenario of `tests/sdk/drive.mjs`; `None` when the SDK is not installed here.
fn drive(ws: &Path, server: &FakeServer, scenario: &str) -> Option<Vec<Value>> {
    let dir = sdk_dir()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/drive.mjs");
    let out = Command::new("timeout")
        .args(["120", "node"])
        .arg(&script)
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_troupe"))
        .arg(ws)
        .arg(scenario)
        .current_dir(ws)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("HOME", ws.join(".home"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env(troupe_testkit::AGENT_HEADER_VAR, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "drive.mjs {scenario} failed: {stderr}\nstdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    Some(common::json_lines(&out))
}

fn of_kind<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|v| v["kind"] == kind).collect()
}

fn the_result(seen: &[Value]) -> &Value {
    let results = of_kind(seen, "result");
    assert_eq!(results.len(), 1, "{seen:#?}");
    results[0]
}

#[test]
fn query_runs_a_tool_loop() {
    let ws = TempWorkspace::new();
    ws.write("here.txt", "x");
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "loop") else {
        return;
    };
    assert_eq!(seen[0]["subtype"], "init", "{seen:#?}");
    let calls = of_kind(&seen, "tool_use");
    assert_eq!(calls.len(), 1, "{seen:#?}");
    assert_eq!(calls[0]["name"], "Bash");
    assert_eq!(calls[0]["input"]["command"], "ls");
    let result = the_result(&seen);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    assert!(result["result"].as_str().unwrap().contains("here.txt"));
}

#[test]
fn a_hook_callback_denies_the_call_it_guards() {
    let ws = TempWorkspace::new();
    ws.write("build/out.txt", "artifact");
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "hook_deny") else {
        return;
    };
    let hooks = of_kind(&seen, "hook");
    assert_eq!(hooks.len(), 1, "{seen:#?}");
    assert_eq!(hooks[0]["event"], "PreToolUse");
    assert_eq!(hooks[0]["tool"], "Bash");
    assert_eq!(hooks[0]["command"], "rm -rf build");
    assert!(ws.exists("build/out.txt"), "the denied rm did not run");
    let text = the_result(&seen)["result"].as_str().unwrap().to_string();
    assert!(text.contains("the hook protects build"), "{text}");
}

#[test]
fn an_sdk_mcp_tool_is_called_in_the_sdk() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "sdk_mcp") else {
        return;
    };
    let ran = of_kind(&seen, "sdk_tool");
    assert_eq!(ran.len(), 1, "the SDK's tool ran once: {seen:#?}");
    assert_eq!(ran[0]["args"], json!({"a": 2, "b": 3}));
    let result = the_result(&seen);
    assert_eq!(result["subtype"], "success", "{seen:#?}");
    assert_eq!(result["result"], "The tool said: sum=5");
    let first = &server.journal()[0];
    assert!(
        first.tool_names().iter().any(|t| t == "mcp__calc__add"),
        "offered on the first call"
    );
}

#[test]
fn initialize_fields_shape_the_lead() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "initialize") else {
        return;
    };
    assert_eq!(the_result(&seen)["subtype"], "success", "{seen:#?}");
    let first = &server.journal()[0];
    let system = first.system();
    common::assert_contains(
        &system,
        "You are the TS-PROMPT agent.\n\nSECOND-PART: be brief.",
    );
    let init = of_kind(&seen, "system");
    assert_eq!(init[0]["agents"], json!(["reviewer"]), "{seen:#?}");
    assert!(first.body.to_string().contains("Reviews diffs"));
}

#[test]
fn the_preset_prompt_keeps_troupes_and_appends() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "preset") else {
        return;
    };
    assert_eq!(the_result(&seen)["subtype"], "success", "{seen:#?}");
    let system = server.journal()[0].system();
    assert!(system.contains("# How to work"), "{system}");
    common::assert_contains(&system, "APPENDED-MARK: answer briefly.");
}

#[test]
fn bypass_mode_with_the_skip_flag_runs_unasked() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "bypass") else {
        return;
    };
    let result = the_result(&seen);
    assert_eq!(result["subtype"], "success", "{seen:#?}");
    assert_eq!(result["permission_denials"], json!([]));
    assert_eq!(ws.read("notes/draft.txt"), "hello");
}

#[test]
fn agents_are_listed_and_reach_the_task_tool() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/agents/review/linter.md",
        "---\nname: linter\ndescription: Lints files\n---\nYou lint.\n",
    );
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "agents") else {
        return;
    };
    let init = of_kind(&seen, "system");
    let mut agents: Vec<String> =
        serde_json::from_value(init[0]["agents"].clone()).unwrap_or_default();
    agents.sort();
    assert_eq!(agents, ["linter", "reviewer", "tester"], "{seen:#?}");
    let tools = server.journal()[0].body["tools"].clone();
    let task = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .cloned()
        .unwrap();
    let description = task["description"].as_str().unwrap();
    for name in ["reviewer", "tester", "linter"] {
        assert!(description.contains(name), "{description}");
    }
}

#[test]
fn a_project_slash_command_runs_as_its_prompt() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/commands/greet.md",
        "---\ndescription: Greets someone\n---\nSay GREET-MARK to $ARGUMENTS.\n",
    );
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "slash") else {
        return;
    };
    let init = of_kind(&seen, "system");
    let commands = init[0]["slash_commands"].as_array().unwrap();
    assert!(commands.iter().any(|c| c == "greet"), "{seen:#?}");
    let result = the_result(&seen);
    assert_eq!(result["result"], "heard: Say GREET-MARK to Ada.");
}

#[test]
fn a_deny_rule_reaches_the_sdk_as_permission_denied() {
    let ws = TempWorkspace::new();
    ws.write("build/out.txt", "artifact");
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "deny_rule") else {
        return;
    };
    assert!(ws.exists("build/out.txt"));
    let denied: Vec<&Value> = of_kind(&seen, "system")
        .into_iter()
        .filter(|v| v["subtype"] == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 1, "{seen:#?}");
    assert_eq!(denied[0]["tool_name"], "Bash");
    assert_eq!(denied[0]["decision_reason_type"], "rule");
    let result = the_result(&seen);
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
}

#[test]
fn can_use_tool_answers_the_permission_questions() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "permission") else {
        return;
    };
    let asked = of_kind(&seen, "asked");
    assert_eq!(asked.len(), 2, "{seen:#?}");
    assert_eq!(asked[0]["tool"], "Bash");
    assert_eq!(asked[0]["command"], "touch allowed.txt");
    assert!(ws.exists("allowed.txt"), "the allowed call ran");
    assert!(!ws.exists("denied.txt"), "the denied call did not run");
    let results = of_kind(&seen, "result");
    assert_eq!(results.len(), 2, "{seen:#?}");
    assert_eq!(results[0]["permission_denials"], json!([]));
    assert_eq!(results[1]["permission_denials"][0]["tool_name"], "Bash");
    assert!(results[1]["result"]
        .as_str()
        .unwrap()
        .contains("the test says no"));
    // Somebody was asked: no permission_denied event.
    assert!(!seen.iter().any(|v| v["subtype"] == "permission_denied"));
}

#[test]
fn the_sdks_thinking_and_effort_reach_the_model() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "thinking") else {
        return;
    };
    assert_eq!(the_result(&seen)["subtype"], "success", "{seen:#?}");
    let body = &server.journal()[0].body;
    // thinking {type: enabled, budgetTokens: 3000} arrives as --max-thinking-tokens 3000.
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    assert!(body["max_tokens"].as_u64().unwrap() > 3000);
}

#[test]
fn set_model_switches_the_lead_and_the_teammates_spawned_afterwards() {
    let ws = TempWorkspace::new();
    let server = model();
    let Some(seen) = drive(ws.path(), &server, "set_model") else {
        return;
    };
    let results: Vec<&Value> = seen.iter().filter(|v| v["kind"] == "result").collect();
    assert_eq!(results.len(), 2, "{seen:#?}");
    let models = |agent: &str| sdk_model::models_of(&server, agent);
    let lead = models("lead");
    assert_eq!(lead[0], "claude-sonnet-4-5", "{lead:?}");
    assert!(
        lead.len() > 1 && lead[1..].iter().all(|m| m == "claude-opus-4-1"),
        "{lead:?}"
    );
    let helper = models("helper");
    assert!(
        !helper.is_empty(),
        "the teammate never called the model: {seen:#?}"
    );
    assert!(helper.iter().all(|m| m == "claude-opus-4-1"), "{helper:?}");
}
