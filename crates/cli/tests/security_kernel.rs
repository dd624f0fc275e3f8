//! The kernel's side of the gates, through the real binary: an allowed command cannot write the
//! protected files (they are mounted read-only in the call's namespace), deliberate git work
//! still works, a Read deny rule hides its files from every command, and `sandbox.network:
//! deny` takes sockets away from workspace-write commands.
//!
//! Where the kernel lacks what a test needs (Landlock, namespaces, seccomp), the test is skipped
//! with a message, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::kernel::{bash_calls, kernel_sandbox, python3, read};
use common::{headless_go, result_json, script_bash_calls};
use serde_json::Value;
use troupe_testkit::{FakeServer, TempWorkspace};

const PLANTED: &str = "#!/bin/sh\ntouch /tmp/troupe-planted\n";

#[test]
fn allowed_commands_cannot_write_protected_files() {
    if !kernel_sandbox() || !python3() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("evil.sh", PLANTED);
    ws.write(".mcp.json", "{\"mcpServers\": {}}\n");
    ws.write(
        ".claude/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh"}]}]}}"#,
    );
    ws.write(".claude/hooks/check.sh", "#!/bin/sh\nexit 0\n");
    let before: Vec<(&str, String)> = [
        ".git/config",
        ".mcp.json",
        ".claude/settings.json",
        ".claude/hooks/check.sh",
    ]
    .into_iter()
    .map(|p| (p, read(&ws, p)))
    .collect();
    let results = bash_calls(
        &ws,
        &[
            "cp evil.sh .git/hooks/pre-commit",
            "git config core.fsmonitor 'touch /tmp/troupe-planted'",
            "python3 -c \"open('.claude/settings.json', 'w').write('{}')\"",
            "cp evil.sh .mcp.json",
            "cp evil.sh .claude/hooks/check.sh",
            "python3 -c \"import os; os.rename('.git', 'moved')\"",
            "python3 -c \"import os; os.rename('.claude', 'moved')\"",
            // Through troupe's own view of the filesystem, which the mounts do not cover.
            "cp evil.sh /proc/$PPID/root$PWD/.git/hooks/pre-commit",
            "python3 -c \"open('.troupe/settings.json', 'w').write('{}')\"",
            "cp evil.sh notes.txt",
        ],
        &[
            "--allowedTools",
            "Bash(cp:*)",
            "Bash(python3:*)",
            "Bash(git config:*)",
        ],
    );
    for (i, (text, is_error)) in results[..9].iter().enumerate() {
        assert!(*is_error, "call {i} succeeded: {text}");
        assert!(
            text.contains("Read-only file system")
                // troupe's view through /proc: refused, or (in the call's own PID namespace)
                // not there at all.
                || (i == 7 && text.contains("Permission denied"))
                || (i == 7 && text.contains("No such file or directory"))
                || text.contains("Device or resource busy")
                || text.contains("could not lock config file"),
            "call {i} was not refused by the kernel: {text}"
        );
    }
    for (path, content) in before {
        assert_eq!(read(&ws, path), content, "{path} changed");
    }
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(ws.join(".git/config").exists() && ws.join(".claude").is_dir());
    // The whole .troupe folder is troupe's: read-only to the call.
    assert!(!ws.join(".troupe/settings.json").exists());
    let (fine, is_error) = &results[9];
    assert!(!is_error, "{fine}");
    assert_eq!(
        read(&ws, "notes.txt"),
        PLANTED,
        "the rest of the workspace is writable"
    );
}

#[test]
fn deliberate_git_work_still_works_in_workspace_write() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("a.txt", "a\n");
    let results = bash_calls(
        &ws,
        &[
            "git add a.txt",
            "git commit -q -m first",
            "git checkout -q -b feature",
            "cp a.txt b.txt",
            "git add b.txt",
            "git commit -q -m second",
        ],
        &["--allowedTools", "Bash(git:*)", "Bash(cp:*)"],
    );
    for (i, (text, is_error)) in results.iter().enumerate() {
        assert!(!is_error, "git call {i} failed: {text}");
    }
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s", "feature"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "second\nfirst\n");
    let head = read(&ws, ".git/HEAD");
    assert_eq!(head.trim(), "ref: refs/heads/feature");
}

#[test]
fn a_read_deny_rule_hides_the_files_from_every_command() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("secrets/key", "SECRET-hunter2\n");
    ws.write("secrets/nested/more", "SECRET-hunter3\n");
    ws.write("notes.txt", "SECRET is kept elsewhere\n");
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./secrets/**)"]}}"#,
    );
    ws.git_commit_all("first");
    let results = bash_calls(
        &ws,
        &[
            "grep -r SECRET .",
            "cat secrets/key",
            "cat secrets/nested/more",
            "git grep SECRET",
            "cp -r secrets copied && cat copied/key",
        ],
        &["--allowedTools", "Bash(cp:*)"],
    );
    for (i, (text, _)) in results.iter().enumerate() {
        assert!(
            !text.contains("hunter"),
            "call {i} revealed the secret: {text}"
        );
    }
    let (grep, _) = &results[0];
    assert!(
        grep.contains("notes.txt"),
        "other files are searched: {grep}"
    );
    // The file is still there for troupe and the person.
    assert_eq!(read(&ws, "secrets/key"), "SECRET-hunter2\n");
}

#[test]
fn network_deny_takes_sockets_from_workspace_write_commands() {
    if !kernel_sandbox() || !python3() {
        return;
    }
    let ws = TempWorkspace::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        path.display()
    );
    let udp = "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9)); print('sent')\"";
    let allowed = ["--allowedTools", "Bash(python3:*)"];
    // With network: allow the connect goes through: the test's socket is real.
    ws.write(
        ".troupe/settings.json",
        r#"{"sandbox": {"mode": "auto", "network": "allow"}}"#,
    );
    let results = bash_calls(&ws, &[connect.as_str()], &allowed);
    assert!(results[0].0.contains("connected"), "{:?}", results[0]);
    assert!(listener.accept().is_ok(), "the listener saw the connection");
    ws.write(
        ".troupe/settings.json",
        r#"{"sandbox": {"mode": "auto", "network": "deny"}}"#,
    );
    let results = bash_calls(&ws, &[connect.as_str(), udp], &allowed);
    for (text, is_error) in &results {
        assert!(*is_error, "{text}");
        assert!(
            text.contains("PermissionError") || text.contains("Operation not permitted"),
            "{text}"
        );
    }
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
}

#[test]
fn the_user_namespace_path_protects_and_hides_alike() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("evil.sh", PLANTED);
    ws.write("secrets/key", "SECRET-hunter2\n");
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./secrets/**)"]}}"#,
    );
    let config = read(&ws, ".git/config");
    let server = FakeServer::start();
    script_bash_calls(
        &server,
        &[
            "cp evil.sh .git/config",
            "grep -r SECRET .",
            "cp evil.sh ok.sh",
        ],
    );
    let out = headless_go(
        ws.path(),
        &server,
        &["--allowedTools", "Bash(cp:*)"],
        &[("TROUPE_SANDBOX_FORCE_USERNS", "1")],
    );
    assert_eq!(result_json(&out)["result"], "done");
    let results: Vec<(String, bool)> = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    assert!(results[0].1, "{:?}", results[0]);
    assert!(
        results[0].0.contains("Read-only file system"),
        "{:?}",
        results[0]
    );
    assert_eq!(read(&ws, ".git/config"), config);
    assert!(!results[1].0.contains("hunter"), "{:?}", results[1]);
    assert!(!results[2].1, "{:?}", results[2]);
    assert_eq!(read(&ws, "ok.sh"), PLANTED);
}

#[test]
fn without_a_mount_namespace_workspace_write_commands_are_refused_saying_why() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("evil.sh", PLANTED);
    let server = FakeServer::start();
    script_bash_calls(&server, &["cp evil.sh .git/hooks/pre-commit", "ls"]);
    let out = headless_go(
        ws.path(),
        &server,
        &["--allowedTools", "Bash(cp:*)"],
        &[("TROUPE_SANDBOX_FORCE_NO_NAMESPACE", "1")],
    );
    assert_eq!(result_json(&out)["result"], "done");
    let results: Vec<(String, bool)> = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    let (refused, is_error) = &results[0];
    assert!(*is_error, "{refused}");
    common::assert_contains(
        refused,
        "no private mount namespace to keep protected files read-only",
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    // A read-only command with nothing to hide needs no namespace and still runs.
    let (listing, is_error) = &results[1];
    assert!(!is_error && listing.contains("evil.sh"), "{listing}");
}

#[test]
fn an_unprivileged_troupe_confines_through_a_user_namespace() {
    use std::os::unix::fs::PermissionsExt;
    let root = rustix::process::geteuid().is_root();
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !kernel_sandbox() || !root || !setpriv {
        eprintln!("skipping: needs root (to drop to an unprivileged uid) and setpriv");
        return;
    }
    // The binary and a workspace that uid 65534 can reach.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("troupe");
    std::fs::copy(env!("CARGO_BIN_EXE_troupe"), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "").unwrap();
    std::os::unix::fs::chown(&ws, Some(65534), Some(65534)).unwrap();
    for entry in [".git", ".git/hooks", ".git/config"] {
        std::os::unix::fs::chown(ws.join(entry), Some(65534), Some(65534)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&binary)
        .args(["sandbox", "check", "--json"])
        .current_dir(&ws)
        .env("HOME", &ws)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success(),
        "{report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["namespaces"]["userNamespace"], true, "{report}");
    let checks = report["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["check"].as_str().unwrap().contains("protected file") && c["ok"] == true),
        "{report}"
    );
    assert!(checks.iter().all(|c| c["ok"] == true), "{report}");
    let protected = report["workspaceWrite"]["protected"].to_string();
    assert!(protected.contains(".git/config"), "{protected}");
}

#[test]
fn excluded_commands_run_outside_the_sandbox_once_allowed() {
    if !kernel_sandbox() {
        return;
    }
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    ws.write(
        ".claude/settings.json",
        r#"{"sandbox": {"excludedCommands": ["touch"]}}"#,
    );
    let touched = outside.path().join("touched");
    let copied = outside.path().join("copied");
    let results = bash_calls(
        &ws,
        &[
            &format!("touch {}", touched.display()),
            &format!("cp /dev/null {}", copied.display()),
        ],
        &["--allowedTools", "Bash(touch:*)", "Bash(cp:*)"],
    );
    // touch is excluded: it wrote outside the workspace; cp is not: the sandbox refused it.
    assert!(!results[0].1, "{:?}", results[0]);
    assert!(touched.exists());
    assert!(results[1].1, "{:?}", results[1]);
    assert!(!copied.exists());
}
