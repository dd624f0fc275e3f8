//! Sessions through the binary: `/clear` starts a new session that `--continue` respects,
//! `--continue` goes on with the newest session even one that failed before its first answer
//! (the one `troupe sessions` lists first),
//! `--resume` without an id and without a terminal says what to do, the workspace is found
//! from a subdirectory, and `.troupe/` stays out of `git status`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;

use common::{repl, result_json, run, stderr, subcommand, troupe};
use serde_json::Value;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// The texts of every message of the lead's last request.
fn last_request_texts(server: &FakeServer) -> Vec<String> {
    let last = server.requests_for("lead").pop().expect("the lead asked");
    last.messages().iter().map(|m| m.text()).collect()
}

/// `troupe sessions --json` in `dir`.
fn sessions_json(dir: &std::path::Path) -> Vec<Value> {
    let out = subcommand(dir, &["sessions", "--json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("sessions --json prints JSON")
        .as_array()
        .expect("an array")
        .clone()
}

/// An address nothing listens on.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn clear_then_continue_does_not_bring_back_the_cleared_messages() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("noted the secret"), Step::text("fresh")]);
    let out = repl(ws.path(), &server, &[], "the secret is 42\n/clear\n/exit\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("new session"), "{stdout}");

    let listed = sessions_json(ws.path());
    assert_eq!(
        listed.len(),
        2,
        "the cleared session and the new one: {listed:?}"
    );
    let (new, old) = (&listed[0], &listed[1]);
    assert_eq!(old["first_prompt"], "the secret is 42");
    assert_eq!(new["cleared_from"], old["id"]);
    assert!(stdout.contains(new["id"].as_str().unwrap()), "{stdout}");

    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "what was the secret?",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["session_id"], new["id"]);
    let texts = last_request_texts(&server);
    assert!(
        texts.iter().all(|t| !t.contains("the secret is 42")),
        "the cleared conversation came back: {texts:?}"
    );

    // The old session is still there for whoever asks for it by id.
    server.script("lead", [Step::text("back")]);
    let old_id = old["id"].as_str().unwrap();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic)
            .args(["-p", "and now?", "--resume", old_id]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(last_request_texts(&server)
        .iter()
        .any(|t| t.contains("the secret is 42")));
}

#[test]
fn continue_picks_the_newest_session_even_one_that_failed_before_its_first_answer() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("remembered"), Step::text("continued")]);
    let first = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "remember plums"]));
    assert!(first.status.success(), "stderr: {}", stderr(&first));

    // The server is down: the run fails before any answer.
    let failed = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("ANTHROPIC_BASE_URL", dead_url())
        .args([
            "-p",
            "this one never got an answer",
            "--output-format",
            "json",
        ]));
    assert!(!failed.status.success());
    // Listed first, marked as never answered.
    let listed = sessions_json(ws.path());
    assert_eq!(listed[0]["answered"], false, "{listed:?}");
    assert_eq!(listed[0]["first_prompt"], "this one never got an answer");

    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go on",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["session_id"], listed[0]["id"]);
    let texts = last_request_texts(&server);
    assert!(
        texts.iter().any(|t| t.contains("never got an answer")),
        "the newest session was not continued: {texts:?}"
    );
    assert!(
        texts.iter().all(|t| !t.contains("remember plums")),
        "{texts:?}"
    );
}

#[test]
fn sessions_lists_id_start_first_prompt_turns_and_cost_newest_first() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", serde_json::json!({"command": "true"})),
            Step::text("one"),
            Step::text("two"),
        ],
    );
    for prompt in ["first  prompt\nwith lines", "second prompt"] {
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            prompt,
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert!(out.status.success(), "stderr: {}", stderr(&out));
    }
    let listed = sessions_json(ws.path());
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["first_prompt"], "second prompt");
    assert_eq!(listed[1]["first_prompt"], "first prompt with lines");
    assert_eq!(listed[1]["turns"], 2, "two model replies: {:?}", listed[1]);
    assert_eq!(listed[0]["turns"], 1);
    for s in &listed {
        assert!(s["id"].as_str().is_some_and(|id| id.len() == 36), "{s}");
        assert!(s["started_ms"].as_u64().unwrap() > 0);
        assert!(s["started"].as_str().unwrap().ends_with('Z'));
        assert!(s["usage"]["output_tokens"].as_u64().unwrap() > 0, "{s}");
        assert!(s.get("cost_usd").is_some());
    }
    assert!(listed[0]["started_ms"].as_u64() >= listed[1]["started_ms"].as_u64());

    let text = subcommand(ws.path(), &["sessions"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("FIRST PROMPT") && text.contains("second prompt"),
        "{text}"
    );
}

#[test]
fn resume_without_an_id_on_a_terminal_offers_a_numbered_list() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::text("a"), Step::text("b"), Step::text("picked")],
    );
    for prompt in ["the older one", "the newer one"] {
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", prompt]));
        assert!(out.status.success(), "stderr: {}", stderr(&out));
    }
    let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
    cmd.args(["-p", "go on", "--resume"]);
    let mut pty = pty_support::Pty::spawn(cmd, 30, 160);
    let limit = std::time::Duration::from_secs(60);
    let screen = pty.wait_for_text("resume which session?", limit);
    let newer = screen.lines().position(|l| l.contains("the newer one"));
    let older = screen.lines().position(|l| l.contains("the older one"));
    assert!(newer < older && newer.is_some(), "newest first: {screen}");
    pty.send("x\n");
    pty.wait_for_text("a number from 1 to 2", limit);
    pty.send("2\n");
    pty.wait_for_text("picked", limit);
    let status = pty.wait_exit(limit).expect("troupe ends");
    assert!(status.success(), "{}", pty.contents());
    assert_eq!(
        last_request_texts(&server).first().map(String::as_str),
        Some("the older one")
    );
}

#[test]
fn resume_without_an_id_and_without_a_terminal_says_to_pass_one() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi", "--resume"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--resume <id>") && err.contains("troupe sessions"),
        "{err}"
    );
    assert!(server.journal().is_empty());
}

#[test]
fn the_workspace_is_found_from_a_subdirectory_and_stays_out_of_git_status() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("src/lib.rs", "// code\n");
    ws.git_commit_all("init");
    let server = FakeServer::start();
    server.script("lead", [Step::text("from below"), Step::text("again")]);
    // Started in src/: the workspace is the git root.
    let out = run(troupe(&ws.join("src"), &server, Wire::Anthropic).args(["-p", "hello"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(ws.join(".troupe/sessions").is_dir());
    assert!(!ws.join("src/.troupe").exists());

    let status = ws.git(&["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "git status shows: {status}");
    assert!(
        !ws.join(".gitignore").exists(),
        "the user's .gitignore is not touched"
    );

    // From another terminal, in src/: the same team, and still no .troupe/ there.
    let out = subcommand(&ws.join("src"), &["team", "status"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let out = subcommand(&ws.join("src"), &["sessions", "--json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
    let out = subcommand(&ws.join("src"), &["task", "create", "a task"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let out = subcommand(&ws.join("src"), &["task", "list", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("a task"));
    assert!(!ws.join("src/.troupe").exists());

    // --continue from src/ finds the session the first run left at the top.
    let out =
        run(troupe(&ws.join("src"), &server, Wire::Anthropic).args(["-p", "more", "--continue"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        last_request_texts(&server).first().map(String::as_str),
        Some("hello")
    );
    let status = ws.git(&["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "git status shows: {status}");
}

#[test]
fn troupe_commands_that_create_troupe_dir_keep_it_out_of_git_status() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README", "x\n");
    ws.git_commit_all("init");
    let out = subcommand(ws.path(), &["task", "create", "first task"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(ws.join(".troupe").is_dir());
    let status = ws.git(&["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "git status shows: {status}");

    let other = TempWorkspace::new();
    other.git_init();
    let out = subcommand(other.path(), &["cron", "add", "in 10m", "check"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let status = other.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".troupe"), "git status shows: {status}");
}

#[test]
fn hooks_after_clear_see_the_new_session() {
    use std::os::unix::fs::PermissionsExt;
    let ws = TempWorkspace::new();
    let log = ws.join("hooks.jsonl");
    let hook = ws.write(
        ".claude/hooks/log.sh",
        format!(
            "#!/bin/sh\ncat >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let entry =
        serde_json::json!([{"hooks": [{"type": "command", "command": ".claude/hooks/log.sh"}]}]);
    ws.write(
        ".claude/settings.json",
        serde_json::json!({"hooks": {"SessionStart": entry, "SessionEnd": entry}}).to_string(),
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("one"), Step::text("two")]);
    let out = repl(ws.path(), &server, &[], "hi\n/clear\nagain\n/exit\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let listed = sessions_json(ws.path());
    let (new, old) = (listed[0]["id"].clone(), listed[1]["id"].clone());
    let said = |event: &str, key: &str, value: &str| {
        events
            .iter()
            .find(|e| e["hook_event_name"] == event && e[key] == value)
    };
    let ended = said("SessionEnd", "reason", "clear").expect("the cleared session ended");
    assert_eq!(ended["session_id"], old, "{events:?}");
    let started = said("SessionStart", "source", "clear").expect("a new session started");
    assert_eq!(started["session_id"], new, "{events:?}");
    assert!(started["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{}.jsonl", new.as_str().unwrap())));
}

#[test]
fn resume_in_the_repl_picks_a_past_session_and_lists_agents_and_hooks() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews a diff\ntools: Read, Grep\n---\nYou review.\n",
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("first answer")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "first prompt"]));
    assert!(out.status.success(), "{}", stderr(&out));

    server.script(
        "lead",
        [Step::text("second answer"), Step::text("third answer")],
    );
    let hooks = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#;
    let out = repl(
        ws.path(),
        &server,
        &["--settings", hooks],
        "second prompt\n/agents\n/hooks\n/resume\n2\nthird prompt\n/exit\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // /agents: the definition with its file; /hooks: the hook with the layer it came from.
    let agent_row = stdout
        .lines()
        .find(|l| l.starts_with("reviewer "))
        .unwrap_or_default();
    assert!(
        agent_row.contains(".claude/agents/reviewer.md") && agent_row.contains("read_file, grep"),
        "{stdout}"
    );
    let hook_row = stdout
        .lines()
        .find(|l| l.starts_with("Stop "))
        .unwrap_or_default();
    assert!(
        hook_row.contains("true") && hook_row.contains("--settings"),
        "{stdout}"
    );
    // /resume: the numbered list (this session first), then the chosen one goes on.
    assert!(stdout.contains("second prompt (this session)"), "{stdout}");
    assert!(stdout.contains("(resumed session "), "{stdout}");
    let texts = last_request_texts(&server);
    assert!(
        texts.iter().any(|t| t.contains("first prompt")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("third prompt")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("second prompt")),
        "{texts:?}"
    );
}
