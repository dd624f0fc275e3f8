//! Shared helpers for tests that drive the real `troupe` binary against the fake model server.
#![allow(dead_code)]

use serde_json::json;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use troupe_testkit::{FakeServer, Reply, Step, Wire};

/// A `troupe` command pointed at `server` in `wire` format, inside workspace `ws`.
pub fn troupe(ws: &Path, server: &FakeServer, wire: Wire) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.current_dir(ws)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TROUPE_MODEL")
        .env_remove("DISABLE_PROMPT_CACHING")
        .env("HOME", ws.join(".home"))
        // Trust answers live under HOME; nothing of the caller's decides them.
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("TROUPE_REQUIRE_TRUST")
        .env_remove("TROUPE_WORKSPACE_TRUST")
        .env("TROUPE_RETRY_BASE_MS", "5")
        // The fake server routes each agent's script by the header this turns on.
        .env(troupe_testkit::AGENT_HEADER_VAR, "1")
        // The team tests reach through the store: a named one. A lead without a team of its
        // own name (its session's) is `leads.rs`'s subject.
        .env("TROUPE_TEAM", "default")
        .stdin(Stdio::null());
    match wire {
        Wire::Anthropic => {
            cmd.env("ANTHROPIC_BASE_URL", server.url())
                .env("ANTHROPIC_API_KEY", "test-key");
        }
        Wire::OpenAi => {
            cmd.env("OPENAI_BASE_URL", server.openai_url())
                .args(["--model", "local-model"]);
        }
        Wire::Responses => unreachable!("troupe has no Responses API client"),
    }
    cmd
}

/// Runs a command to completion.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("troupe binary runs")
}

/// The last stdout line parsed as JSON (the result object).
pub fn result_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or_else(|| {
            panic!(
                "no stdout; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(last).unwrap_or_else(|e| panic!("result is not JSON ({e}): {last}"))
}

/// Every stdout line parsed as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that `haystack` contains `needle`, showing the haystack when it does not.
#[track_caller]
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{haystack}");
}

/// Asserts that `out`'s stderr contains `needle`, showing the stderr when it does not.
#[track_caller]
pub fn assert_stderr_has(out: &Output, needle: &str) {
    assert_contains(&stderr(out), needle);
}

/// `troupe -p PROMPT --output-format json --permission-mode bypassPermissions EXTRA…`, run to completion.
pub fn headless_bypass(ws: &Path, server: &FakeServer, prompt: &str, extra: &[&str]) -> Output {
    headless_in_mode(ws, server, prompt, "bypassPermissions", extra)
}

/// `troupe -p PROMPT --output-format json --permission-mode MODE EXTRA…`, run to completion.
pub fn headless_in_mode(
    ws: &Path,
    server: &FakeServer,
    prompt: &str,
    mode: &str,
    extra: &[&str],
) -> Output {
    run(troupe(ws, server, Wire::Anthropic)
        .args([
            "-p",
            prompt,
            "--output-format",
            "json",
            "--permission-mode",
            mode,
        ])
        .args(extra))
}

/// (distinct, total) mail ids the transcript at `path` records as delivered (none when it is
/// missing).
pub fn delivered_mail(path: &Path) -> (std::collections::HashSet<String>, usize) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut ids = std::collections::HashSet::new();
    let mut total = 0;
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        for id in value["mail_ids"].as_array().into_iter().flatten() {
            total += 1;
            ids.insert(id.as_str().unwrap().to_string());
        }
    }
    (ids, total)
}

/// A fake model server whose lead follows `steps`.
pub fn lead_server(steps: impl IntoIterator<Item = Step>) -> FakeServer {
    let server = FakeServer::start();
    server.script("lead", steps);
    server
}

/// Anything not scripted answers with a short acknowledgement naming the agent.
pub fn ack_fallback(server: &FakeServer) {
    server.set_fallback(|req| Step::reply(Reply::text(format!("ack from {}", req.agent))));
}

/// The lead spawns one teammate (`spawn_teammate` with `input`), then ends its turn.
pub fn lead_spawns(server: &FakeServer, input: serde_json::Value) {
    server.script(
        "lead",
        [Step::tool("spawn_teammate", input), Step::text("spawned")],
    );
}

/// Scripts the lead to call bash with each of `commands` in turn, then answer "done".
pub fn script_bash_calls(server: &FakeServer, commands: &[&str]) {
    let steps = commands
        .iter()
        .map(|command| Step::tool("bash", json!({ "command": command })))
        .chain([Step::text("done")]);
    server.script("lead", steps);
}

/// `troupe -p go --output-format json ARGS…` with `env` set, run to completion; asserts it
/// succeeded.
#[track_caller]
pub fn headless_go<K: AsRef<OsStr>, V: AsRef<OsStr>>(
    ws: &Path,
    server: &FakeServer,
    args: &[&str],
    env: &[(K, V)],
) -> Output {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    cmd.args(["-p", "go", "--output-format", "json"]).args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    out
}

pub mod kernel;
pub mod tmux;

/// Whether a process is running (a zombie counts as gone); shared with the tools crate's tests.
#[path = "../../../tools/tests/common/procs.rs"]
mod procs;
#[allow(unused_imports)] // not every test binary checks processes
pub use procs::alive;

/// A `troupe` subcommand run in `ws` as from another terminal (no model involved).
pub fn subcommand(ws: &Path, args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws)
        .args(args))
}

/// The REPL with `args`, fed `input` on stdin, run to completion.
pub fn repl(ws: &Path, server: &FakeServer, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = troupe(ws, server, Wire::Anthropic)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("troupe binary runs");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .expect("stdin accepts the input");
    }
    child.wait_with_output().expect("troupe binary runs")
}

/// The name of the workspace's one team (`None` before any), for a lead started without
/// `--team` (its team is named after its session).
pub fn only_team(ws: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(ws.join(".troupe/teams"))
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    assert!(names.len() <= 1, "several teams: {names:?}");
    names.pop()
}

/// The default team's roster as JSON, read through the store (the file backend keeps it as a
/// log, `roster.jsonl`); `None` while the lead has not created the team.
pub async fn team_roster(ws: &Path) -> Option<serde_json::Value> {
    let troupe_dir = ws.join(".troupe");
    if !troupe_store::file::exists(&troupe_dir, "default") {
        return None;
    }
    let store = troupe_store::file::open(&troupe_dir, "default").ok()?;
    let roster = store.roster().await.ok()?;
    serde_json::to_value(roster).ok()
}

/// A child's stdout read line by line on a thread, so a test can wait for a line with a bound.
pub struct StdoutLines(std::sync::mpsc::Receiver<String>);

impl StdoutLines {
    /// Starts reading `child`'s stdout (which must be piped).
    pub fn of(child: &mut std::process::Child) -> StdoutLines {
        use std::io::BufRead;
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().expect("the child's stdout is piped");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdoutLines(rx)
    }

    /// The next line containing `needle` (lines before it are passed over); panics when none
    /// comes within `limit` of each other.
    pub fn wait_for(&self, needle: &str, limit: std::time::Duration) -> String {
        loop {
            let line = self
                .0
                .recv_timeout(limit)
                .unwrap_or_else(|_| panic!("{needle} never printed"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// Every line up to and including the next one containing `needle`; panics when none
    /// comes within `limit` of each other.
    pub fn until(&self, needle: &str, limit: std::time::Duration) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .0
                .recv_timeout(limit)
                .unwrap_or_else(|_| panic!("{needle} never printed; before: {seen:?}"));
            let found = line.contains(needle);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }

    /// Every line still to come, until the child closes its stdout.
    pub fn rest(&self) -> Vec<String> {
        self.0.iter().collect()
    }
}
