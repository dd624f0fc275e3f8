//! The OS sandbox and process ownership through the real binary: what a command may write
//! depends on why it was allowed, a machine without Landlock fails closed, and no tool process
//! outlives troupe when it is told to stop.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{alive, headless_go, result_json, run, script_bash_calls, stderr, subcommand, troupe};
use protocol_support::{calls, headless, results_of, spawn};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

fn landlock() -> bool {
    let out = subcommand(Path::new("/"), &["sandbox", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let available = report["landlock"]["available"] == true;
    troupe_testkit::requirement(&format!("a usable Landlock ({report})"), available)
}

/// Runs troupe headless (json output) with `args` on a model that calls bash with each of
/// `commands` in turn, and returns each call's tool result (text, is_error).
fn bash_calls(
    ws: &TempWorkspace,
    commands: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> Vec<(String, bool)> {
    let server = FakeServer::start();
    script_bash_calls(&server, commands);
    let out = headless_go(ws.path(), &server, args, env);
    assert_eq!(result_json(&out)["result"], "done");
    server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result"))
        .collect()
}

/// A git repository whose `core.fsmonitor` runs `touch` on the two returned paths (one in the
/// workspace, one outside) whenever `git status` runs — what a model could set up with an edit.
fn booby_trapped_repo(ws: &TempWorkspace, outside: &Path) -> (PathBuf, PathBuf) {
    ws.git_init();
    ws.write("a.txt", "a");
    let (inside, outside) = (ws.join("pwned"), outside.join("pwned"));
    ws.git(&[
        "config",
        "core.fsmonitor",
        &format!("touch {} {}; false", inside.display(), outside.display()),
    ]);
    (inside, outside)
}

#[test]
fn a_read_only_command_runs_in_the_read_only_sandbox_even_when_git_config_runs_a_hook() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let (pwned_in, pwned_out) = booby_trapped_repo(&ws, outside.path());
    let results = bash_calls(&ws, &["ls", "git status --short"], &[], &[]);
    let (listing, is_error) = &results[0];
    assert!(!is_error && listing.contains("a.txt"), "{listing}");
    let (status, _) = &results[1];
    assert!(status.contains("a.txt"), "git status still works: {status}");
    assert!(!pwned_in.exists(), "the hook wrote in the workspace");
    assert!(!pwned_out.exists(), "the hook wrote outside");
    // The trap is real: unconfined, the same call springs it.
    ws.write(".troupe/settings.json", r#"{"sandbox": "off"}"#);
    bash_calls(&ws, &["git status --short"], &[], &[]);
    assert!(pwned_in.exists() && pwned_out.exists());
}

#[test]
fn a_plan_gated_teammate_runs_read_only_commands_read_only_even_under_bypass() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let (pwned_in, pwned_out) = booby_trapped_repo(&ws, outside.path());
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let reply = match rec.agent.as_str() {
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                spawn("bob", "Look at the repository.", true),
            ),
            "bob" if calls(rec, "bash").is_empty() => {
                Reply::tool("bash", json!({"command": "git status --short"}))
            }
            _ => Reply::text("ok"),
        };
        Step::reply(reply)
    });
    headless(&ws, &server, "bypassPermissions", &[]);
    let bob = server.requests_for("bob").pop().unwrap();
    let status = results_of(&bob, "bash");
    assert_eq!(status.len(), 1, "bob ran git status once");
    assert!(status[0].0.contains("a.txt"), "{:?}", status[0]);
    assert!(
        !pwned_in.exists(),
        "an unapproved plan's command wrote in the workspace"
    );
    assert!(
        !pwned_out.exists(),
        "an unapproved plan's command wrote outside"
    );
}

#[test]
fn an_allowed_command_writes_in_the_workspace_but_not_outside_it() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escape");
    let results = bash_calls(
        &ws,
        &["touch inside", &format!("touch {}", escape.display())],
        &["--allowedTools", "Bash(touch:*)"],
        &[],
    );
    assert!(!results[0].1, "{}", results[0].0);
    assert!(ws.exists("inside"));
    let (text, is_error) = &results[1];
    assert!(*is_error && text.contains("Permission denied"), "{text}");
    assert!(text.contains("workspace-write sandbox"), "{text}");
    assert!(!escape.exists());
}

#[test]
fn bypass_permissions_runs_unconfined() {
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let free = outside.path().join("free");
    let results = bash_calls(
        &ws,
        &[&format!("touch {}", free.display())],
        &["--permission-mode", "bypassPermissions"],
        &[],
    );
    assert!(!results[0].1, "{}", results[0].0);
    assert!(free.exists());
}

#[test]
fn without_landlock_a_read_only_command_is_refused_headless_saying_why() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "a");
    let forced = [("TROUPE_SANDBOX_FORCE_UNSUPPORTED", "1")];
    let results = bash_calls(&ws, &["ls"], &[], &forced);
    let (text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    assert!(text.contains("no usable Landlock"), "{text}");
    assert!(text.contains("read-only sandbox"), "{text}");
    common::assert_contains(text, "--permission-mode bypassPermissions");
    assert!(text.contains("\"sandbox\": \"off\""), "{text}");
    assert!(!text.contains("a.txt"), "it ran: {text}");
    // An allowed command needs workspace-write, and is refused the same way.
    let results = bash_calls(
        &ws,
        &["touch b"],
        &["--allowedTools", "Bash(touch:*)"],
        &forced,
    );
    assert!(results[0].1 && results[0].0.contains("workspace-write sandbox"));
    assert!(!ws.exists("b"));
}

#[test]
fn without_landlock_the_repl_asks_and_a_yes_runs_the_command_unconfined() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    ws.write("a.txt", "a");
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "ls"})),
        Step::text("listed"),
        Step::tool("bash", json!({"command": "ls"})),
        Step::text("not listed"),
    ]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .env("TROUPE_SANDBOX_FORCE_UNSUPPORTED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = "list\ny\nlist again\nn\n/exit\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no usable Landlock"), "{text}");
    let lead = server.requests_for("lead");
    let (listing, is_error) = lead[1].last_tool_result().unwrap();
    assert!(!is_error && listing.contains("a.txt"), "{listing}");
    let (refusal, is_error) = lead[3].last_tool_result().unwrap();
    assert!(is_error && !refusal.contains("a.txt"), "{refusal}");
}

#[test]
fn without_landlock_bypass_or_sandbox_off_still_run() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "a");
    let forced = [("TROUPE_SANDBOX_FORCE_UNSUPPORTED", "1")];
    let bypass = bash_calls(
        &ws,
        &["ls"],
        &["--permission-mode", "bypassPermissions"],
        &forced,
    );
    assert!(
        !bypass[0].1 && bypass[0].0.contains("a.txt"),
        "{:?}",
        bypass[0]
    );
    ws.write(".troupe/settings.json", r#"{"sandbox": "off"}"#);
    let off = bash_calls(&ws, &["ls"], &[], &forced);
    assert!(!off[0].1 && off[0].0.contains("a.txt"), "{:?}", off[0]);
}

#[test]
fn an_invalid_sandbox_setting_is_an_error_naming_the_file() {
    let ws = TempWorkspace::new();
    ws.write(
        ".troupe/settings.json",
        r#"{"sandbox": {"mode": "auto", "writableRoots": ["relative/dir"]}}"#,
    );
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(".troupe/settings.json"), "{err}");
    assert!(err.contains("not an absolute path"), "{err}");
}

#[test]
fn writable_roots_from_settings_are_writable_in_workspace_write() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    let extra = tempfile::tempdir().unwrap();
    let root = extra.path().canonicalize().unwrap();
    ws.write(
        ".troupe/settings.json",
        json!({"sandbox": {"writableRoots": [root]}}).to_string(),
    );
    let target = root.join("made");
    let results = bash_calls(
        &ws,
        &[&format!("touch {}", target.display())],
        &["--allowedTools", "Bash(touch:*)"],
        &[],
    );
    assert!(!results[0].1, "{}", results[0].0);
    assert!(target.exists());
}

#[test]
fn sandbox_check_reports_landlock_and_proves_it() {
    let out = subcommand(Path::new("/"), &["sandbox", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    if report["landlock"]["available"] == true {
        assert!(out.status.success(), "{report}");
        assert!(report["landlock"]["abi"].as_i64().unwrap() >= 3, "{report}");
        assert_eq!(report["usable"], true);
        let checks = report["checks"].as_array().unwrap();
        let expected = match report["namespaces"]["available"] == true {
            // The proof that a protected file stays read-only needs the mount namespace.
            true => 6,
            false => 5,
        };
        assert_eq!(checks.len(), expected, "{report}");
        assert_eq!(report["readOnly"]["network"], "deny", "{report}");
        assert!(checks.iter().all(|c| c["ok"] == true), "{report}");
        let writable = report["workspaceWrite"]["writable"].to_string();
        assert!(writable.contains("\"workspace\""), "{writable}");
    }
    let forced = run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["sandbox", "check", "--json"])
        .env("TROUPE_SANDBOX_FORCE_UNSUPPORTED", "1"));
    assert_eq!(forced.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(report["landlock"]["available"], false);
    assert!(report["landlock"]["reason"]
        .as_str()
        .unwrap()
        .contains("TROUPE_SANDBOX_FORCE_UNSUPPORTED"));
}

/// The toolchain's homes, so `cargo` (a rustup proxy) works with HOME pointed elsewhere.
fn toolchain_env() -> Vec<(String, PathBuf)> {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let var = |key: &str, default: &str| {
        std::env::var_os(key)
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(default))
    };
    vec![
        ("CARGO_HOME".into(), var("CARGO_HOME", ".cargo")),
        ("RUSTUP_HOME".into(), var("RUSTUP_HOME", ".rustup")),
    ]
}

#[test]
fn an_allowed_cargo_build_writes_its_target_in_the_workspace() {
    if !landlock() {
        return;
    }
    let ws = TempWorkspace::new();
    ws.write(
        "Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    ws.write("src/main.rs", "fn main() { println!(\"tiny\"); }\n");
    let target = ws.join("target");
    let mut env: Vec<(String, String)> = toolchain_env()
        .into_iter()
        .map(|(k, v)| (k, v.display().to_string()))
        .collect();
    env.push(("CARGO_TARGET_DIR".into(), target.display().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let results = bash_calls(
        &ws,
        &["cargo build --offline"],
        &["--allowedTools", "Bash(cargo build:*)"],
        &env,
    );
    assert!(!results[0].1, "{}", results[0].0);
    assert!(target.join("debug/tiny").exists(), "{}", results[0].0);
}

/// Waits (boundedly) until `cond` holds.
fn eventually(cond: impl FnMut() -> bool) -> bool {
    troupe_testkit::eventually(Duration::from_secs(20), cond)
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// troupe running a long tool call (a plain background `sleep` and a double-forked daemon) gets
/// `signal`: both are gone once troupe has exited with 128 + signal.
fn signal_ends_tool_processes(signal: libc::c_int) {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let command = "sleep 300 & echo $! > s.tmp && mv s.tmp s.pid; \
                   (setsid sleep 300 & echo $! > d.tmp && mv d.tmp d.pid) ; \
                   wait";
    server.script(
        "lead",
        [
            Step::tool("bash", json!({ "command": command })),
            Step::text("done"),
        ],
    );
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sleep, daemon) = (ws.join("s.pid"), ws.join("d.pid"));
    assert!(
        eventually(|| sleep.exists() && daemon.exists()),
        "the tool call never started"
    );
    let (sleep, daemon) = (read_pid(&sleep), read_pid(&daemon));
    assert!(alive(sleep) && alive(daemon));
    let pid = rustix::process::Pid::from_child(&child);
    let named = rustix::process::Signal::from_named_raw(signal).unwrap();
    rustix::process::kill_process(pid, named).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + signal), "{status:?}");
    assert!(!alive(sleep), "sleep {sleep} outlived troupe");
    assert!(!alive(daemon), "daemon {daemon} outlived troupe");
}

#[test]
fn sigterm_ends_the_tool_processes_before_troupe_exits() {
    signal_ends_tool_processes(libc::SIGTERM);
}

#[test]
fn sighup_ends_the_tool_processes_before_troupe_exits() {
    signal_ends_tool_processes(libc::SIGHUP);
}

#[test]
fn sigint_ends_a_headless_run_and_its_tool_processes() {
    signal_ends_tool_processes(libc::SIGINT);
}
