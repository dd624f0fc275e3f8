//! What hooks cost: the headless two-call loop (`troupe -p "list files"`:
//! bash `ls` + 2 model calls against the fake server) run in three Claude Code projects, the
//! runs interleaved so machine drift hits all three alike:
//! - bare: no settings;
//! - idle hooks: `.claude/settings.json` with 3 hooks none of which match this run, beside 20
//!   skills and 5 agent definitions (target: ≤ 2 ms over bare);
//! - one hook: a PreToolUse hook on Bash that reads its input (`cat`), run once per tool call.
//!
//! Run: `cargo bench -p troupe-cli --bench hooks [-- --runs 40]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use support::{arg_value, ms, quantile, verdict, Measured};
use troupe_testkit::{FakeServer, TempWorkspace};

const TARGET_IDLE_OVERHEAD_MS: f64 = 2.0;
const WARMUP: usize = 2;

/// The three projects.
#[derive(Debug, Clone, Copy)]
enum Project {
    Bare,
    IdleHooks,
    OneHook,
}

fn command_hook(command: &str) -> Value {
    json!({"type": "command", "command": command})
}

/// A fresh workspace laid out as `project`.
fn workspace(project: Project) -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("src/main.rs", "fn main() {}\n");
    let hooks = match project {
        Project::Bare => return ws,
        // None of these fires in this run: no Edit/Write/Glob call, no resumed session.
        Project::IdleHooks => json!({
            "PreToolUse": [{"matcher": "Edit|Write", "hooks": [command_hook("exit 2")]}],
            "PostToolUse": [{"matcher": "Glob", "hooks": [command_hook("exit 2")]}],
            "SessionStart": [{"matcher": "resume", "hooks": [command_hook("echo resumed")]}],
        }),
        Project::OneHook => json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [command_hook("cat > /dev/null")]}],
        }),
    };
    ws.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
    );
    if let Project::IdleHooks = project {
        for i in 0..20 {
            ws.write(
                format!(".claude/skills/skill-{i:02}/SKILL.md"),
                format!("---\nname: skill-{i:02}\ndescription: Does task {i} the project's way.\n---\nSteps for task {i}.\n"),
            );
        }
        for i in 0..5 {
            ws.write(
                format!(".claude/agents/agent-{i}.md"),
                format!("---\nname: agent-{i}\ndescription: Specialist {i}.\ntools: Read, Grep\n---\nYou are specialist {i}.\n"),
            );
        }
    }
    ws
}

/// One headless run in a fresh workspace; checks it is the expected success.
fn one_run(server: &FakeServer, project: Project) -> Result<Measured, String> {
    let ws = workspace(project);
    let (m, out, err) = support::run_list_files(ws.path(), server, "bypassPermissions")
        .map_err(|e| format!("cannot run troupe: {e}"))?;
    check(&m, &out, &err, project)?;
    Ok(m)
}

fn check(m: &Measured, out: &Path, err: &Path, project: Project) -> Result<(), String> {
    let stdout = std::fs::read_to_string(out).unwrap_or_default();
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    if m.code != Some(0) {
        return Err(format!(
            "{project:?}: troupe exited with {:?}; stderr: {stderr}",
            m.code
        ));
    }
    let result: Value = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("{project:?}: no JSON result on stdout: {stdout}"))?;
    if result["subtype"] != "success" || result["num_turns"] != 2 {
        return Err(format!("{project:?}: unexpected result: {result}"));
    }
    let events = std::fs::read_to_string(out.with_file_name(".troupe/teams/default/events.jsonl"))
        .unwrap_or_default();
    let hook_runs = events.matches("\"hook_ran\"").count();
    let expected = match project {
        Project::Bare | Project::IdleHooks => 0,
        Project::OneHook => 1,
    };
    if hook_runs != expected {
        return Err(format!(
            "{project:?}: {hook_runs} hook runs, expected {expected}"
        ));
    }
    Ok(())
}

fn walls(runs: &[Measured]) -> Vec<Duration> {
    let mut walls: Vec<Duration> = runs.iter().map(|m| m.wall).collect();
    walls.sort();
    walls
}

fn row(label: &str, runs: &[Measured], bare_median: Duration) {
    let w = walls(runs);
    let median = quantile(&w, 0.5);
    println!(
        "{label:<44} {:>5} {:>9.2} {:>9.2} {:>+10.2}",
        runs.len(),
        ms(median),
        ms(quantile(&w, 0.9)),
        ms(median) - ms(bare_median)
    );
}

fn main() -> Result<(), String> {
    support::wrapper_main_if_requested();
    let runs = arg_value("--runs").unwrap_or(40).max(5);
    let server = FakeServer::start();
    support::script_ls(&server);
    let projects = [Project::Bare, Project::IdleHooks, Project::OneHook];
    for _ in 0..WARMUP {
        for project in projects {
            one_run(&server, project)?;
        }
    }
    let mut measured: [Vec<Measured>; 3] = Default::default();
    for _ in 0..runs {
        for (i, project) in projects.into_iter().enumerate() {
            measured[i].push(one_run(&server, project)?);
        }
    }
    let bare = quantile(&walls(&measured[0]), 0.5);
    println!(
        "hooks: troupe -p \"list files\" (bash ls + 2 model calls, fake server), runs interleaved"
    );
    println!(
        "{:<44} {:>5} {:>9} {:>9} {:>10}",
        "project", "n", "p50 ms", "p90 ms", "vs bare ms"
    );
    row("bare (no settings)", &measured[0], bare);
    row(
        "3 hooks, none matching; 20 skills, 5 agents",
        &measured[1],
        bare,
    );
    row(
        "1 matching PreToolUse hook (cat), 1 call",
        &measured[2],
        bare,
    );
    let idle = ms(quantile(&walls(&measured[1]), 0.5)) - ms(bare);
    let one = ms(quantile(&walls(&measured[2]), 0.5)) - ms(bare);
    println!(
        "SUMMARY hooks_idle_overhead_ms={idle:.2} hooks_one_hook_per_call_ms={one:.2} idle_target={}",
        verdict(idle <= TARGET_IDLE_OVERHEAD_MS)
    );
    Ok(())
}
