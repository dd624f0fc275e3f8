//! A `Read` deny rule from a Claude Code project's settings keeps every tool from revealing the
//! file: read_file, grep and glob alike.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, stderr};
use serde_json::json;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[test]
fn a_read_deny_rule_hides_the_file_from_every_reading_tool() {
    let ws = TempWorkspace::new();
    ws.write(".env", "API_TOKEN=hunter2-secret\n");
    ws.write("app.txt", "API_TOKEN is read from the environment\n");
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./.env)"]}}"#,
    );
    let server = common::lead_server([
        Step::tool("read_file", json!({"path": ".env"})),
        Step::tool("grep", json!({"pattern": "API_TOKEN"})),
        Step::tool("grep", json!({"pattern": "hunter2", "path": ".env"})),
        Step::tool("glob", json!({"pattern": "**/.env*"})),
        Step::text("done"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "look", "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    for (i, r) in requests.iter().enumerate().skip(1) {
        let (text, _) = r.last_tool_result().unwrap();
        assert!(
            !text.contains("hunter2"),
            "call {i} revealed the secret: {text}"
        );
    }
    let (read, is_error) = requests[1].last_tool_result().unwrap();
    assert!(is_error && read.contains("Read(./.env)"), "{read}");
    let (grep_all, _) = requests[2].last_tool_result().unwrap();
    assert!(
        grep_all.contains("app.txt"),
        "other files are still searched: {grep_all}"
    );
}

/// A workspace with `secrets/key` denied to reading, committed to git, with symlinks into it.
fn secret_workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("secrets/key", "hunter2-secret\n");
    ws.write("public.txt", "nothing to hide\n");
    ws.git_commit_all("first");
    std::os::unix::fs::symlink("secrets/key", ws.join("link")).unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("linkdir")).unwrap();
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./secrets/**)"]}}"#,
    );
    ws
}

#[test]
fn a_symlink_into_a_denied_tree_is_denied_to_the_file_tools() {
    let ws = secret_workspace();
    let server = common::lead_server([
        Step::tool("read_file", json!({"path": "link"})),
        Step::tool("read_file", json!({"path": "linkdir/key"})),
        Step::tool("grep", json!({"pattern": "hunt.r2", "path": "link"})),
        Step::tool("grep", json!({"pattern": "hunt.r2", "path": "linkdir"})),
        Step::tool("grep", json!({"pattern": "hunt.r2"})),
        Step::tool(
            "edit_file",
            json!({"path": "link", "old_string": "hunter2", "new_string": "x"}),
        ),
        Step::tool("read_file", json!({"path": "public.txt"})),
        Step::text("done"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "look", "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    for (i, r) in requests[1..7].iter().enumerate() {
        let (text, _) = r.last_tool_result().unwrap();
        assert!(
            !text.contains("hunter2"),
            "call {i} revealed the secret: {text}"
        );
    }
    // edit_file reads the file to find its old string: an oracle, so it is denied too.
    // (The rule covers what is inside `secrets/`; grep on the directory finds nothing in it.)
    for i in [1, 2, 3, 6] {
        let (text, is_error) = requests[i].last_tool_result().unwrap();
        assert!(
            is_error && text.contains("Read(./secrets/**)"),
            "call {i}: {text}"
        );
    }
    let (public, is_error) = requests[7].last_tool_result().unwrap();
    assert!(!is_error && public.contains("nothing to hide"), "{public}");
    assert_eq!(ws.read("secrets/key"), "hunter2-secret\n");
}

#[test]
fn a_command_naming_a_denied_path_is_refused_in_every_spelling() {
    let ws = secret_workspace();
    let root = ws.path().canonicalize().unwrap();
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    let absolute = format!("cat {}/secrets/key", root.display());
    let parent = format!("cat ../{name}/secrets/key");
    let commands = [
        "cat secrets/key",
        "head -n 1 secrets/key",
        "tail ./secrets/key",
        "cat < secrets/key",
        "cat sec*/key",
        "cat secrets/{key,other}",
        "git show HEAD:secrets/key",
        "git show HEAD:./secrets/key",
        "git cat-file -p HEAD:secrets/key",
        absolute.as_str(),
        parent.as_str(),
        "cat link",
        "cat linkdir/key",
        // Not analysable: it might read anything.
        "eval \"cat secrets/key\"",
    ];
    let server = FakeServer::start();
    let steps = commands
        .iter()
        .map(|c| Step::tool("bash", json!({ "command": c })))
        .chain([
            Step::tool("bash", json!({"command": "cat public.txt"})),
            Step::text("done"),
        ]);
    server.script("lead", steps);
    // Bypass mode runs commands unconfined: only the analysis stands between them and the file.
    let out = headless_in_mode(ws.path(), &server, "look", "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    for (i, command) in commands.iter().enumerate() {
        let (text, is_error) = requests[i + 1].last_tool_result().unwrap();
        assert!(
            !text.contains("hunter2"),
            "{command} revealed the secret: {text}"
        );
        assert!(
            is_error && text.contains("Read(./secrets/**)"),
            "{command}: {text}"
        );
    }
    let (public, is_error) = requests[commands.len() + 1].last_tool_result().unwrap();
    assert!(!is_error && public.contains("nothing to hide"), "{public}");
}

#[test]
fn git_does_not_print_a_denied_file_from_its_store_and_memory_does_not_import_it() {
    let ws = secret_workspace();
    ws.write("CLAUDE.md", "Project notes. @secrets/key @link\n");
    let refused = [
        "git show HEAD",
        "git log -p",
        "git grep hunt.r2 HEAD",
        "git archive HEAD",
    ];
    let runs = ["git log --oneline", "git status --short"];
    let server = FakeServer::start();
    let steps = refused
        .iter()
        .chain(&runs)
        .map(|c| Step::tool("bash", json!({ "command": c })))
        .chain([Step::text("done")]);
    server.script("lead", steps);
    // Default mode: read-only commands run unasked, in the read-only sandbox.
    let out = headless_in_mode(ws.path(), &server, "look", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests_for("lead");
    let system = requests[0].system();
    assert!(system.contains("Project notes."), "{system}");
    assert!(!system.contains("hunter2"), "memory imported it: {system}");
    for (i, command) in refused.iter().enumerate() {
        let (text, is_error) = requests[i + 1].last_tool_result().unwrap();
        assert!(
            is_error && text.contains("Read(./secrets/**)") && text.contains("object store"),
            "{command}: {text}"
        );
        assert!(!text.contains("hunter2"), "{command}: {text}");
    }
    let (log, is_error) = requests[refused.len() + 1].last_tool_result().unwrap();
    assert!(
        !is_error && log.contains("first"),
        "git log --oneline: {log}"
    );
    let (status, is_error) = requests[refused.len() + 2].last_tool_result().unwrap();
    assert!(
        !is_error && !status.contains("denied"),
        "git status: {status}"
    );
}
