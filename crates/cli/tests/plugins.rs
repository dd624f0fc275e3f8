//! Claude Code plugins through the real binary, with three of anthropics/claude-code's official
//! plugins as fixtures (`fixtures/plugins/SOURCE`): `--plugin-dir` loads a plugin's commands
//! (`/commit-commands:commit` expands, its ``!`cmd` ``s run first), agents and hooks (with
//! `CLAUDE_PLUGIN_ROOT`); a local marketplace with `enabledPlugins` loads the same, the
//! workspace's plugin hooks under workspace trust; `troupe plugin list|install|disable`; and
//! ``!`cmd` `` in a project command with and without an `allowed-tools` grant.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{ack_fallback, run, stderr, troupe};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// The fixture plugins' folder (also a marketplace, `fixture-plugins`).
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plugins")
}

fn plugin(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

/// `troupe -p PROMPT --output-format json` with `extra`, against a model that acknowledges.
fn headless(ws: &Path, server: &FakeServer, prompt: &str, extra: &[&str]) -> Output {
    run(troupe(ws, server, Wire::Anthropic)
        .args(["-p", prompt, "--output-format", "json"])
        .args(extra))
}

/// A git repository with one commit and one changed file, as `/commit` expects.
fn repository() -> TempWorkspace {
    let ws = TempWorkspace::new();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(ws.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    ws.write("README.md", "hello\n");
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "first commit"]);
    ws.write("README.md", "hello again\n");
    ws
}

#[test]
fn a_plugin_dir_command_runs_its_context_commands_and_expands_into_the_prompt() {
    let ws = repository();
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(
        ws.path(),
        &server,
        "/commit-commands:commit",
        &["--plugin-dir", &plugin("commit-commands")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = server.journal()[0].all_text();
    assert!(
        prompt.contains("Based on the above changes, create a single git commit."),
        "{prompt}"
    );
    assert!(
        !prompt.contains("!`git"),
        "the context commands ran first: {prompt}"
    );
    assert!(prompt.contains("Current branch: main"), "{prompt}");
    assert!(
        prompt.contains("first commit"),
        "git log's output is in place: {prompt}"
    );
    assert!(
        prompt.contains("+hello again"),
        "git diff's output is in place: {prompt}"
    );
    assert!(!stderr(&out).contains("no plugins"), "{}", stderr(&out));

    // The bare name reaches it too when no other command has it.
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(
        ws.path(),
        &server,
        "/commit",
        &["--plugin-dir", &plugin("commit-commands")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.journal()[0]
        .all_text()
        .contains("create a single git commit"));
}

#[test]
fn a_plugin_agent_is_a_namespaced_subagent() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "task",
                json!({"description": "explore", "prompt": "Trace the login flow", "subagent_type": "feature-dev:code-explorer"}),
            ),
            Step::text("done"),
        ],
    );
    server.set_fallback(|_| Step::reply(Reply::text("explored")));
    let out = headless(
        ws.path(),
        &server,
        "explore",
        &[
            "--plugin-dir",
            &plugin("feature-dev"),
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let journal = server.journal();
    let sub = journal
        .iter()
        .find(|r| r.system().contains("You are an expert code analyst"))
        .expect("a request with the plugin agent's prompt");
    assert!(sub.all_text().contains("Trace the login flow"));
    let (report, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(!is_error, "{report}");
    assert_eq!(report, "explored");
}

#[test]
fn a_plugin_hook_fires_with_its_root_set_and_expanded() {
    let ws = TempWorkspace::new();
    // A plugin of the test's own whose hook shows the variable it got.
    ws.write(
        ".home/probe/.claude-plugin/plugin.json",
        r#"{"name": "probe"}"#,
    );
    ws.write(
        ".home/probe/hooks/hooks.json",
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo \"$CLAUDE_PLUGIN_ROOT|${CLAUDE_PLUGIN_ROOT}\" > seen-root.txt"}]}]}}"#,
    );
    let probe = ws.path().join(".home/probe");
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(
        ws.path(),
        &server,
        "hello",
        &[
            "--plugin-dir",
            probe.to_str().unwrap(),
            "--plugin-dir",
            &plugin("learning-output-style"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let root = probe.canonicalize().unwrap().display().to_string();
    let seen = std::fs::read_to_string(ws.path().join("seen-root.txt")).unwrap();
    assert_eq!(
        seen.trim(),
        format!("{root}|{root}"),
        "set in its environment and expanded"
    );
    // The official plugin's SessionStart script, named through ${CLAUDE_PLUGIN_ROOT}, ran and
    // its additionalContext reached the model.
    let text = server.journal()[0].all_text() + &server.journal()[0].system();
    assert!(text.contains("'learning' output style mode"), "{text}");
}

/// A workspace whose project settings know the fixture marketplace and enable `enabled`.
fn marketplace_project(enabled: &[&str]) -> TempWorkspace {
    let ws = repository();
    let enabled: serde_json::Map<String, serde_json::Value> = enabled
        .iter()
        .map(|id| (id.to_string(), json!(true)))
        .collect();
    ws.write(
        ".claude/settings.json",
        json!({
            "extraKnownMarketplaces": {
                "fixture-plugins": {"source": {"source": "directory", "path": fixtures()}},
                "elsewhere": {"source": {"source": "github", "repo": "someone/plugins"}}
            },
            "enabledPlugins": enabled,
        })
        .to_string(),
    );
    ws
}

#[test]
fn a_local_marketplace_and_enabled_plugins_load_the_same() {
    let ws = marketplace_project(&[
        "commit-commands@fixture-plugins",
        "feature-dev@fixture-plugins",
    ]);
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/commit-commands:commit",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = server.journal()[0].all_text();
    assert!(prompt.contains("create a single git commit"), "{prompt}");
    assert!(prompt.contains("Current branch: main"), "{prompt}");
    let init = &common::json_lines(&out)[0];
    let commands = init["slash_commands"].to_string();
    for name in [
        "commit-commands:commit",
        "commit-commands:clean_gone",
        "feature-dev:feature-dev",
    ] {
        assert!(commands.contains(name), "{name} missing: {commands}");
    }
    let err = stderr(&out);
    assert!(
        err.contains("extraKnownMarketplaces.elsewhere: a github source cannot be fetched"),
        "one line for the marketplace troupe cannot fetch: {err}"
    );
}

#[test]
fn a_project_plugins_hooks_need_workspace_trust() {
    let ws = marketplace_project(&["learning-output-style@fixture-plugins"]);
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_REQUIRE_TRUST", "1")
        .args(["-p", "hello"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("SessionStart"), "{err}");
    assert!(
        err.contains("hooks-handlers/session-start.sh"),
        "the plugin's hook is listed: {err}"
    );
    assert!(
        err.contains("plugin learning-output-style@fixture-plugins"),
        "{err}"
    );
    assert!(server.journal().is_empty(), "nothing ran");
}

#[test]
fn troupe_plugin_lists_installs_and_disables() {
    let ws = marketplace_project(&["commit-commands@fixture-plugins"]);
    let home = ws.path().join(".home");
    let plugin_cmd = |args: &[&str]| {
        run(std::process::Command::new(env!("CARGO_BIN_EXE_troupe"))
            .current_dir(ws.path())
            .env("HOME", &home)
            .arg("plugin")
            .args(args))
    };
    let out = plugin_cmd(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        listing.contains(
            "commit-commands@fixture-plugins v1.0.0  enabled  3 commands, 0 agents, 0 skills"
        ),
        "{listing}"
    );
    assert!(
        listing.contains(
            "feature-dev@fixture-plugins v1.0.0  not installed  1 command, 3 agents, 0 skills"
        ),
        "{listing}"
    );
    assert!(listing.contains("learning-output-style@fixture-plugins v1.0.0  not installed  0 commands, 0 agents, 0 skills, 1 hook"), "{listing}");

    let out = plugin_cmd(&["install", "feature-dev@fixture-plugins"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let user: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        user["enabledPlugins"]["feature-dev@fixture-plugins"],
        json!(true)
    );

    let out = plugin_cmd(&[
        "disable",
        "commit-commands@fixture-plugins",
        "--scope",
        "local",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&plugin_cmd(&["list"]).stdout).to_string();
    assert!(
        listing.contains("commit-commands@fixture-plugins v1.0.0  disabled"),
        "local wins: {listing}"
    );
    assert!(
        listing.contains("feature-dev@fixture-plugins v1.0.0  enabled"),
        "{listing}"
    );

    let out = plugin_cmd(&["install", "nothing@fixture-plugins"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("lists no plugin named nothing"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bang_command_runs_with_an_allowed_tools_grant_and_is_refused_without() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/commands/granted.md",
        "---\nallowed-tools: Bash(echo:*), Bash(touch:*)\n---\nSay: !`echo hi && touch granted.txt` and read @notes.txt\n",
    );
    ws.write(
        ".claude/commands/ungranted.md",
        "Say: !`echo hi && touch ungranted.txt`\n",
    );
    ws.write("notes.txt", "the notes\n");
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(ws.path(), &server, "/granted", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = server.journal()[0].all_text();
    assert!(prompt.contains("Say: hi and read @notes.txt"), "{prompt}");
    assert!(
        prompt.contains("<file path=\"notes.txt\">\nthe notes"),
        "@file attached: {prompt}"
    );
    assert!(ws.path().join("granted.txt").exists());

    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(ws.path(), &server, "/ungranted", &[]);
    assert!(!out.status.success(), "refused headless");
    let err = stderr(&out);
    assert!(
        err.contains("/ungranted: !`echo hi && touch ungranted.txt` was not run"),
        "{err}"
    );
    assert!(
        err.contains("--allowedTools"),
        "says how to allow it: {err}"
    );
    assert!(!ws.path().join("ungranted.txt").exists());
    assert!(server.journal().is_empty(), "the model was not called");
}

#[test]
fn a_skill_is_invocable_by_its_name() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/skills/house-style/SKILL.md",
        "---\nname: house-style\ndescription: Our style\n---\nWrite in short sentences.\n",
    );
    let server = FakeServer::start();
    ack_fallback(&server);
    let out = headless(ws.path(), &server, "/house-style the README", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = server.journal()[0].all_text();
    assert!(prompt.contains("Write in short sentences."), "{prompt}");
    assert!(prompt.contains("ARGUMENTS: the README"), "{prompt}");
}
