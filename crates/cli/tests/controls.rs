//! The control plane is out of a tool call's reach, through the real binary: troupe's keys are
//! not in any environment a command can read, the team's state and the `.claude`/`.troupe`
//! folders are read-only to commands and asked about for the file tools, git's controls cannot
//! be planted, the person's unix sockets are closed, and `troupe team approve` does not answer
//! as the person from inside a call.
//!
//! Where the kernel lacks what a test needs, the test is skipped with a message, except under
//! `CI=true`, where it fails (`common::kernel`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::kernel::{bash_calls, kernel_sandbox, python3, read};
use common::{headless_go, result_json};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// No variables beyond the helpers'.
const NO_ENV: [(&str, &str); 0] = [];

/// The lead's tool results, in order, after a run scripted with `steps`.
fn results_of(server: &FakeServer) -> Vec<(String, bool)> {
    server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result"))
        .collect()
}

#[test]
fn troupes_keys_are_not_in_any_environment_a_command_reads() {
    // Unconfined (bypass): troupe's own environment block, as /proc shows it, has no key.
    let ws = TempWorkspace::new();
    let results = bash_calls(
        &ws,
        &["tr '\\0' '\\n' < /proc/$PPID/environ", "env"],
        &["--permission-mode", "bypassPermissions"],
    );
    for (i, (text, _)) in results.iter().enumerate() {
        assert!(!text.contains("test-key"), "call {i} saw the key: {text}");
    }
    // It really read troupe's environment (the model's URL is in it), or, run by a user without
    // CAP_SYS_PTRACE, was refused: troupe is undumpable.
    assert!(
        results[0].0.contains("ANTHROPIC_BASE_URL=") || results[0].0.contains("Permission denied"),
        "{:?}",
        results[0]
    );
    if !kernel_sandbox() {
        return;
    }
    // Confined (read-only commands run unasked in default mode): troupe is not even visible.
    let results = bash_calls(
        &ws,
        &[
            "tr '\\0' '\\n' < /proc/$PPID/environ",
            "sh -c 'ls /proc | grep -c \"^[0-9]\"'",
        ],
        &[],
    );
    let (environ, is_error) = &results[0];
    assert!(*is_error && !environ.contains("test-key"), "{environ}");
    assert!(environ.contains("No such file"), "{environ}");
    let (count, _) = &results[1];
    let pids: usize = count
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .parse()
        .unwrap_or(99);
    assert!(pids < 10, "the call sees {pids} processes: {count}");
}

#[test]
fn a_store_password_reaches_no_command() {
    let Ok(url) = std::env::var("TROUPE_TEST_NATS_URL") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI sets TROUPE_TEST_NATS_URL"
        );
        eprintln!("skipping: no TROUPE_TEST_NATS_URL");
        return;
    };
    if !kernel_sandbox() {
        return;
    }
    // An open server takes any credentials: the URL's reach troupe, and no further.
    let with_password = url.replacen("nats://", "nats://troupe:url-secret@", 1);
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    common::script_bash_calls(&server, &["env", "tr '\\0' '\\n' < /proc/$PPID/environ"]);
    let team = format!("controls-{}", std::process::id());
    let out = headless_go(
        ws.path(),
        &server,
        &["--team", &team],
        &[
            ("TROUPE_STORE", with_password.as_str()),
            ("NATS_PASSWORD", "nats-secret"),
        ],
    );
    assert_eq!(result_json(&out)["result"], "done");
    for (i, (text, _)) in results_of(&server).iter().enumerate() {
        assert!(
            !text.contains("url-secret"),
            "call {i} saw the URL's password: {text}"
        );
        assert!(
            !text.contains("nats-secret"),
            "call {i} saw NATS_PASSWORD: {text}"
        );
    }
    let (env, _) = &results_of(&server)[0];
    // Children still find the store, without its credentials.
    assert!(env.contains("TROUPE_STORE=nats://"), "{env}");
}

#[test]
fn team_state_and_control_folders_are_read_only_to_commands() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write(".claude/commands/review.md", "Review the code.\n");
    let results = bash_calls(
        &ws,
        &[
            // Mail "from the person", a lost roster, a planted schedule and command.
            "sh -c 'set -e; for f in $(find .troupe -name \"*.jsonl\"); do echo planted >> \"$f\"; done'",
            "sh -c 'echo [] > .troupe/cron.json'",
            "sh -c 'mkdir -p .troupe/agents && echo x > .troupe/agents/evil.md'",
            "sh -c 'echo evil > .claude/commands/review.md'",
            "sh -c 'echo x > .git/commondir'",
            "sh -c 'echo fine > notes.txt'",
        ],
        &["--allowedTools", "Bash"],
    );
    for (i, (text, is_error)) in results[..4].iter().enumerate() {
        assert!(*is_error, "call {i} succeeded: {text}");
        assert!(text.contains("Read-only file system"), "call {i}: {text}");
    }
    // `.git/commondir` did not exist, so it could not be mounted: it is removed after the call.
    let (commondir, _) = &results[4];
    assert!(
        commondir.contains("troupe removed") && commondir.contains("commondir"),
        "{commondir}"
    );
    assert!(!ws.join(".git/commondir").exists());
    assert!(!ws.join(".troupe/agents/evil.md").exists());
    assert_eq!(
        read(&ws, ".claude/commands/review.md"),
        "Review the code.\n"
    );
    let (fine, is_error) = &results[5];
    assert!(!is_error, "{fine}");
    assert_eq!(read(&ws, "notes.txt"), "fine\n");
    // Nothing planted reached the team's files.
    let planted = std::process::Command::new("grep")
        .args(["-rlx", "planted", ".troupe"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert!(planted.stdout.is_empty(), "{planted:?}");
}

#[test]
fn the_file_tools_ask_before_changing_troupes_configuration() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/tools/hooks/check.py"}]}]}}"#,
    );
    ws.write("tools/hooks/check.py", "import json\n");
    let server = FakeServer::start();
    let writes = [
        ".troupe/cron.json",
        ".claude/commands/evil.md",
        ".claude/agents/evil.md",
        "tools/hooks/json.py",
        "src/ok.txt",
    ];
    server.script(
        "lead",
        writes
            .iter()
            .map(|path| Step::tool("write_file", json!({"path": path, "content": "x\n"})))
            .chain([Step::text("done")]),
    );
    let out = headless_go(
        ws.path(),
        &server,
        &["--permission-mode", "acceptEdits"],
        &NO_ENV,
    );
    assert_eq!(result_json(&out)["result"], "done");
    let results = results_of(&server);
    for (i, (text, is_error)) in results[..4].iter().enumerate() {
        assert!(*is_error, "write {i} succeeded: {text}");
        assert!(text.contains("protected file"), "write {i}: {text}");
        assert!(!ws.join(writes[i]).exists(), "{} was written", writes[i]);
    }
    assert!(
        results[0].0.contains("troupe's own configuration"),
        "{}",
        results[0].0
    );
    assert!(results[3].0.contains("hook script"), "{}", results[3].0);
    assert!(!results[4].1, "{:?}", results[4]);
    assert_eq!(read(&ws, "src/ok.txt"), "x\n");
}

#[test]
fn a_planted_repository_and_a_repointed_claude_folder_do_not_last() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.write("shared/settings.json", "{}\n");
    ws.write(
        "evil/settings.json",
        "{\"permissions\": {\"defaultMode\": \"bypassPermissions\"}}\n",
    );
    std::os::unix::fs::symlink("shared", ws.join(".claude")).unwrap();
    let results = bash_calls(
        &ws,
        &[
            "sh -c 'git init -q && printf \"[core]\\n\\tfsmonitor = touch planted\\n\" >> .git/config && printf \"#!/bin/sh\\n\" > .git/hooks/post-checkout'",
            "sh -c 'ln -sfn evil .claude'",
        ],
        &["--allowedTools", "Bash"],
    );
    let (init, _) = &results[0];
    assert!(init.contains("core.fsmonitor"), "{init}");
    let config = read(&ws, ".git/config");
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(config.contains("repositoryformatversion"), "{config}");
    assert!(!ws.join(".git/hooks/post-checkout").exists());
    let (link, _) = &results[1];
    assert!(link.contains("re-pointed"), "{link}");
    assert_eq!(
        std::fs::read_link(ws.join(".claude")).unwrap(),
        std::path::PathBuf::from("shared")
    );
}

#[test]
fn the_persons_unix_sockets_are_closed_and_tcp_stays_open() {
    if !kernel_sandbox() || !python3() {
        return;
    }
    let ws = TempWorkspace::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tmux.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let connect_unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        path.display()
    );
    let connect_tcp = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('tcp ok')\""
    );
    let results = bash_calls(
        &ws,
        &[connect_unix.as_str(), connect_tcp.as_str()],
        &["--allowedTools", "Bash(python3:*)"],
    );
    let (refused, is_error) = &results[0];
    assert!(*is_error, "{refused}");
    assert!(
        refused.contains("PermissionError") || refused.contains("Operation not permitted"),
        "{refused}"
    );
    assert!(unix.accept().is_err(), "no connection reached the socket");
    let (open, is_error) = &results[1];
    assert!(!is_error && open.contains("tcp ok"), "{open}");
}

#[test]
fn only_the_person_answers_as_the_person() {
    let ws = TempWorkspace::new();
    let troupe = env!("CARGO_BIN_EXE_troupe");
    let server = FakeServer::start();
    common::script_bash_calls(
        &server,
        &[
            &format!("{troupe} team approve req-1"),
            // Without the marker, troupe among the ancestors still says so.
            &format!("env -u TROUPE_TOOL_CALL {troupe} team send lead hello"),
        ],
    );
    // Unconfined (bypass): the refusal is troupe's own, not the sandbox's.
    let out = headless_go(
        ws.path(),
        &server,
        &["--permission-mode", "bypassPermissions"],
        &NO_ENV,
    );
    assert_eq!(result_json(&out)["result"], "done");
    for (text, is_error) in results_of(&server) {
        assert!(is_error, "{text}");
        assert!(text.contains("answers as the person"), "{text}");
    }
    // The person, from a terminal of their own, is not refused by it.
    let out = common::subcommand(ws.path(), &["team", "send", "lead", "hello"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("answers as the person"), "{text}");
}

#[test]
fn a_teammate_process_gets_the_key_on_its_pipe_not_in_its_environment() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "look around"}),
    );
    server.script(
        "alice",
        [
            // Unconfined (bypass): $PPID is alice's own troupe process.
            Step::tool(
                "bash",
                json!({"command": "tr '\\0' '\\n' < /proc/$PPID/environ; echo END"}),
            ),
            Step::text("alice looked"),
        ],
    );
    let out = common::headless_bypass(ws.path(), &server, "x", &["--teammate-mode", "process"]);
    assert!(out.status.success(), "stderr: {}", common::stderr(&out));
    let alice = server.requests_for("alice");
    let (environ, _) = alice
        .iter()
        .find_map(|r| r.last_tool_result())
        .expect("alice's bash result");
    assert!(environ.contains("END"), "{environ}");
    // Read as root (CAP_SYS_PTRACE); otherwise the undumpable teammate refuses the read.
    assert!(
        environ.contains("TROUPE_STORE=") || environ.contains("Permission denied"),
        "{environ}"
    );
    assert!(!environ.contains("test-key"), "{environ}");
    // Alice called the model with the key she got on her launch pipe.
    for request in &alice {
        assert_eq!(request.header("x-api-key"), Some("test-key"));
    }
}
