//! Custom slash commands and output styles through the real binary: `-p "/name args"` sends
//! the command's expanded prompt (checked in the fake model's journal) with its
//! `allowed-tools` granted and its `model` used for that turn, `system/init` lists the
//! commands, and the `outputStyle` setting puts a style into the system prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use common::{json_lines, repl, run, stderr, troupe};
use repl_support::{leave, prompt_row, repl_in_pty, LIMIT};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// A model that runs `touch made.txt` when the prompt asks for a component, then reports.
fn model() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|req| {
        if let Some((output, is_error)) = req.last_tool_result() {
            return Step::reply(Reply::text(format!("tool said ({is_error}): {output}")));
        }
        match req.all_text().contains("Create component") {
            true => Step::tool("bash", json!({"command": "touch made.txt"})),
            false => Step::reply(Reply::text("plain answer")),
        }
    });
    server
}

fn project() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/commands/frontend/component.md",
        "---\ndescription: Make a component\nargument-hint: [name] [kind]\nallowed-tools: Bash(touch:*)\nmodel: claude-command-model\n---\nCreate component $1 of kind $2 (all: $ARGUMENTS).\n",
    );
    ws.write(".claude/commands/review.md", "Review the diff carefully.\n");
    ws.write(
        ".home/.claude/commands/git/wip.md",
        "Commit work in progress: $ARGUMENTS\n",
    );
    ws
}

#[test]
fn a_command_runs_with_its_arguments_tools_and_model() {
    let ws = project();
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/frontend:component Button \"primary large\"",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    let init = &lines[0];
    assert_eq!(init["subtype"], "init");
    let commands: Vec<&str> = init["slash_commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in ["help", "compact", "frontend:component", "review", "git:wip"] {
        assert!(commands.contains(&name), "{name} missing: {commands:?}");
    }
    let journal = server.journal();
    let first = &journal[0];
    let prompt = first.all_text();
    assert!(
        prompt.contains(
            "Create component Button of kind primary large (all: Button \"primary large\")."
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("$ARGUMENTS"), "{prompt}");
    assert_eq!(first.model(), "claude-command-model");
    // The command's allowed-tools let the call run although the default mode would ask.
    assert!(ws.exists("made.txt"), "{}", stderr(&out));
    let result = lines.last().unwrap();
    assert_eq!(result["permission_denials"], json!([]));
    assert!(result["result"].as_str().unwrap().contains("(false)"));
}

#[test]
fn the_grant_and_the_model_last_one_turn_and_short_names_work() {
    let ws = project();
    let server = model();
    // The same call without the command is refused: nothing grants it.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "Create component Button",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.exists("made.txt"));
    assert_ne!(server.journal()[0].model(), "claude-command-model");
    // A user command by its short name; arguments without a placeholder are appended.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/review main..HEAD",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let last = server.journal().last().unwrap().all_text();
    common::assert_contains(&last, "Review the diff carefully.\n\nARGUMENTS: main..HEAD");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "/wip parser half done",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let last = server.journal().last().unwrap().all_text();
    common::assert_contains(&last, "Commit work in progress: parser half done");
}

#[test]
fn an_output_style_shapes_the_system_prompt() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/output-styles/pirate.md",
        "---\nname: Pirate\ndescription: Talks like a pirate\n---\nAnswer every question as a pirate would.\n",
    );
    ws.write(".claude/settings.json", r#"{"outputStyle": "pirate"}"#);
    let server = model();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "hello",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["output_style"], "Pirate");
    let system = server.journal()[0].system();
    common::assert_contains(
        &system,
        "# Output style: Pirate\nAnswer every question as a pirate would.",
    );
    assert!(
        !system.contains("a coding agent"),
        "a style without keep-coding-instructions drops the coding identity: {system}"
    );
    // A built-in style keeps the coding instructions; an unknown one is a warning naming them,
    // and the default style applies.
    ws.write(".claude/settings.json", r#"{"outputStyle": "Explanatory"}"#);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hello"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let system = server.journal().last().unwrap().system();
    assert!(system.contains("# Output style: Explanatory"), "{system}");
    assert!(system.contains("a coding agent"), "{system}");
    ws.write(".claude/settings.json", r#"{"outputStyle": "nope"}"#);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hello"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let system = server.journal().last().unwrap().system();
    assert!(!system.contains("# Output style"), "{system}");
    let err = stderr(&out);
    assert!(
        err.contains("outputStyle") && err.contains("Pirate"),
        "{err}"
    );
}

#[test]
fn the_repl_lists_runs_and_completes_custom_commands() {
    let ws = project();
    let server = model();
    let out = repl(ws.path(), &server, &[], "/help\n/review HEAD~1\n/exit\n");
    let text = String::from_utf8_lossy(&out.stdout);
    common::assert_contains(
        &text,
        "/frontend:component [name] [kind]  Make a component (project:frontend)",
    );
    assert!(text.contains("/git:wip  Commit work in progress"), "{text}");
    assert!(text.contains("plain answer"), "{text}");
    let last = server.journal().last().unwrap().all_text();
    assert!(last.contains("Review the diff carefully."), "{last}");
    // Tab completes a command's name at the prompt.
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("/front\t");
    pty.wait_for("the completed name", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> /frontend:component")
    });
    pty.send("\u{15}/gi\t");
    pty.wait_for("the user's command", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> /git:wip")
    });
    pty.send("\u{15}");
    leave(pty);
}
