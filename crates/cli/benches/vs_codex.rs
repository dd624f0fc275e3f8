//! troupe against Codex CLI on the same two-call loop: "list the files", one shell
//! call (`ls`), then an answer naming what it printed, both against the same fake model server
//! (troupe on the Anthropic wire, Codex on the OpenAI Responses API it speaks). Each side is
//! measured twice: first-run state every time (troupe in a fresh workspace and home per run,
//! Codex with a fresh home per run), and state kept as a person keeps it (troupe with one
//! workspace and home reused by all its runs, where its sessions and teams pile up under
//! `.troupe/`; Codex with one home reused by all its runs, its state, logs and sessions piling
//! up there; Codex's workspace is fresh per run, as it keeps nothing in it). Prints p50 wall
//! time and peak RSS of each and the ratios of the p50 walls, fresh against fresh and reused
//! against reused (and, as earlier versions printed, Codex's reused home against troupe's
//! fresh runs); the target is Codex at least 33× slower in both. CPU time (user plus system, the run and
//! what it reaped) is printed beside it, with its ratio, since it moves much less than the wall
//! when the machine is busy; each side's runs wait (up to a minute) for the CPU pressure to
//! fall to 1 % first, and the pressure they started with is printed.
//!
//! The server plays an instantaneous model: each answer leaves in one write, as a server that
//! has all its events ready would send it, not flushed event by event (each flush costs the
//! server a write and the client a wake, about 0.5 ms of troupe's two calls and the same for
//! Codex's).
//!
//! Run: `cargo bench -p troupe-cli --bench vs_codex [-- --runs 20] [-- --codex PATH]`.
//! Codex is found at `--codex PATH`, else `$TROUPE_CODEX`, else `codex` on `PATH`; without it
//! the bench says so and exits 0. Install the pinned version with
//! `npm i -E @openai/codex@0.169.0 --prefix /tmp/codex`: its native binary is
//! `/tmp/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`
//! (the `codex` the package puts on `PATH` is a Node launcher in front of it, which adds Node's
//! start-up to every run). Codex runs with its defaults but for the provider (the fake server,
//! `wire_api = "responses"`, key from an environment variable), `--sandbox danger-full-access`
//! (troupe's `bypassPermissions`: the command runs unconfined) and `--skip-git-repo-check`;
//! `codex exec` never asks for approval.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::{mib, ms, quantile, run_measured, troupe, verdict, Measured};
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace, Wire};

const TARGET_RATIO: f64 = 33.0;
const WARMUP: usize = 1;
/// Each side's runs start once the CPU pressure is at most this (%), or after [`QUIET_WAIT`].
const QUIET: f64 = 1.0;
const QUIET_WAIT: Duration = Duration::from_secs(60);
/// What the workspace holds, in `ls` order; each run must answer with exactly these.
const FILES: [&str; 3] = ["Cargo.toml", "README.md", "src"];
const ANSWER: &str = "files: Cargo.toml,README.md,src";

/// The shell tool call for the request's wire: troupe's `bash`, or whichever of Codex's shell
/// tools the request offers (`exec_command` in 0.169; `shell_command` and `shell` before).
fn ls_call(rec: &Recorded) -> Step {
    if rec.wire != Wire::Responses {
        return Step::tool("bash", json!({"command": "ls"}));
    }
    let names = rec.tool_names();
    let has = |n: &str| names.iter().any(|t| t == n);
    if has("exec_command") {
        Step::tool("exec_command", json!({"cmd": "ls"}))
    } else if has("shell_command") {
        Step::tool("shell_command", json!({"command": "ls"}))
    } else {
        Step::tool("shell", json!({"command": ["bash", "-lc", "ls"]}))
    }
}

/// First call: run `ls`. Second: answer with the workspace entries the output names (each
/// harness wraps the output in its own header lines, which this leaves out).
fn script(server: &FakeServer) {
    server.set_fallback(|rec| match rec.last_tool_result() {
        None => ls_call(rec),
        Some((output, _)) => {
            let seen: Vec<&str> = output
                .lines()
                .map(str::trim)
                .filter(|l| FILES.contains(l))
                .collect();
            Step::reply(Reply::text(format!("files: {}", seen.join(","))))
        }
    });
}

fn workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    ws.write("README.md", "# demo\n");
    ws.write("src/main.rs", "fn main() {}\n");
    ws
}

/// Where Codex is: `--codex PATH`, `$TROUPE_CODEX`, or `codex` on `PATH`.
fn find_codex() -> Option<PathBuf> {
    let args: Vec<String> = std::env::args().collect();
    let flag = args
        .iter()
        .position(|a| a == "--codex")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let named = flag.or_else(|| std::env::var_os("TROUPE_CODEX").map(PathBuf::from));
    if let Some(path) = named {
        return path.is_file().then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("codex"))
        .find(|p| p.is_file())
}

fn codex_version(codex: &Path) -> String {
    Command::new(codex)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// `codex exec` pointed at the fake server, in workspace `ws`, with `home` as its home.
fn codex_command(codex: &Path, ws: &Path, home: &Path, server: &FakeServer) -> Command {
    // Codex refuses a CODEX_HOME that does not exist.
    std::fs::create_dir_all(home.join(".codex")).expect("codex home");
    let provider = format!(
        "model_providers.fake={{name=\"fake\", base_url=\"{}\", env_key=\"FAKE_MODEL_KEY\", \
         wire_api=\"responses\"}}",
        server.openai_url()
    );
    let mut cmd = Command::new(codex);
    cmd.current_dir(ws)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODEX_API_KEY")
        .env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("FAKE_MODEL_KEY", "bench-key")
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
        ])
        .args(["-c", "model_provider=fake", "-c", &provider])
        .args(["-m", "gpt-5.4", "list the files"])
        .stdin(Stdio::null());
    cmd
}

/// One measured run; checks it exited 0 and answered with the listing.
fn one_run(
    mut cmd: Command,
    ws: &TempWorkspace,
    result: impl Fn(&str) -> Option<String>,
) -> Result<Measured, String> {
    let out = ws.path().join(".out");
    let err = ws.path().join(".err");
    let m = run_measured(&mut cmd, &out, &err).map_err(|e| format!("cannot run: {e}"))?;
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    if m.code != Some(0) {
        return Err(format!("exited with {:?}; stderr: {stderr}", m.code));
    }
    match result(&stdout) {
        Some(answer) if answer == ANSWER => Ok(m),
        other => Err(format!(
            "answered {other:?}, expected {ANSWER:?}; stdout: {stdout}"
        )),
    }
}

/// One troupe run in `ws`, or in a fresh workspace (and home) of its own.
fn troupe_run(server: &FakeServer, ws: Option<&TempWorkspace>) -> Result<Measured, String> {
    let fresh;
    let ws = match ws {
        Some(ws) => ws,
        None => {
            fresh = workspace();
            &fresh
        }
    };
    let mut cmd = troupe(ws.path(), server);
    cmd.args(["-p", "list the files", "--output-format", "json"])
        .args(["--permission-mode", "bypassPermissions"]);
    one_run(cmd, ws, |stdout| {
        let last = stdout.lines().rfind(|l| !l.trim().is_empty())?;
        let v: Value = serde_json::from_str(last).ok()?;
        v["result"].as_str().map(str::to_string)
    })
    .map_err(|e| format!("troupe: {e}"))
}

/// One Codex run in a fresh workspace; its home is `home`, or one of its own in the workspace.
fn codex_run(codex: &Path, home: Option<&Path>, server: &FakeServer) -> Result<Measured, String> {
    let ws = workspace();
    let fresh = ws.path().join(".home");
    let cmd = codex_command(codex, ws.path(), home.unwrap_or(&fresh), server);
    // `codex exec` prints the final message on stdout.
    one_run(cmd, &ws, |stdout| {
        stdout
            .lines()
            .rfind(|l| l.starts_with("files:"))
            .map(|l| l.trim().to_string())
    })
    .map_err(|e| format!("codex: {e}"))
}

/// `runs` measured runs after the warm-up, checking each made exactly two model calls.
fn measure(
    server: &FakeServer,
    runs: usize,
    run: impl Fn() -> Result<Measured, String>,
) -> Result<Vec<Measured>, String> {
    for _ in 0..WARMUP {
        run()?;
    }
    let before = server.journal().len();
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        out.push(run()?);
    }
    let calls = server.journal().len() - before;
    if calls != 2 * runs {
        return Err(format!("expected {} model calls, saw {calls}", 2 * runs));
    }
    Ok(out)
}

/// p50 wall (ms), p50 peak RSS (MiB) and p50 CPU time, user plus system (ms).
fn medians(runs: &[Measured]) -> (f64, f64, f64) {
    fn p50<T: Copy + Ord>(runs: &[Measured], of: impl Fn(&Measured) -> T) -> T {
        let mut values: Vec<T> = runs.iter().map(of).collect();
        values.sort();
        quantile(&values, 0.5)
    }
    (
        ms(p50(runs, |m| m.wall)),
        mib(p50(runs, |m| m.max_rss_kib)),
        ms(p50(runs, |m| m.cpu)),
    )
}

/// The pressure a side's runs started with, for printing.
fn pressure(p: Option<f64>) -> String {
    p.map_or_else(|| "not reported".to_string(), |p| format!("{p:.1} %"))
}

fn main() -> Result<(), String> {
    support::wrapper_main_if_requested();
    let Some(codex) = find_codex() else {
        println!(
            "vs_codex: skipped, Codex CLI not found (--codex PATH, $TROUPE_CODEX or `codex` on \
             PATH; npm i -E @openai/codex@0.169.0 --prefix /tmp/codex)"
        );
        return Ok(());
    };
    let runs = support::arg_value("--runs").unwrap_or(20).max(5);
    let server = FakeServer::start();
    server.set_whole_answers(true);
    script(&server);
    // Each side starts on a quiet machine: Codex's runs load both cores, and a burst that
    // lands on troupe's runs (under a second in all) moves its median by half.
    let ours_pressure = support::wait_for_quiet_cpu(QUIET, QUIET_WAIT);
    let ours = measure(&server, runs, || troupe_run(&server, None))?;
    // troupe keeps a project's sessions and teams in the project (`.troupe/`), its user's
    // settings in its home: one workspace and home reused by all its runs is troupe's side
    // of Codex's reused home.
    let kept = workspace();
    let ours_kept = measure(&server, runs, || troupe_run(&server, Some(&kept)))?;
    let theirs_pressure = support::wait_for_quiet_cpu(QUIET, QUIET_WAIT);
    let theirs = measure(&server, runs, || codex_run(&codex, None, &server))?;
    let reused_pressure = support::wait_for_quiet_cpu(QUIET, QUIET_WAIT);
    let reused_home = tempfile::tempdir().map_err(|e| format!("a home for Codex: {e}"))?;
    let reused = measure(&server, runs, || {
        codex_run(&codex, Some(reused_home.path()), &server)
    })?;
    let (t_wall, t_rss, t_cpu) = medians(&ours);
    let (k_wall, k_rss, k_cpu) = medians(&ours_kept);
    let (c_wall, c_rss, c_cpu) = medians(&theirs);
    let (r_wall, r_rss, r_cpu) = medians(&reused);
    let reused_home_ratio = r_wall / t_wall;
    let reused_ratio = r_wall / k_wall;
    let ratio = c_wall / t_wall;
    let cpu_ratio = c_cpu / t_cpu;
    println!("two-call loop (\"list the files\": ls, then the answer), same fake model server");
    println!(
        "{:<44} {:>5} {:>10} {:>12} {:>12} {:>16}",
        "run", "n", "p50 ms", "rss p50 MiB", "cpu p50 ms", "cpu pressure"
    );
    println!(
        "{:<44} {runs:>5} {t_wall:>10.1} {t_rss:>12.1} {t_cpu:>12.1} {:>16}",
        "troupe -p, fresh workspace and home",
        pressure(ours_pressure)
    );
    println!(
        "{:<44} {runs:>5} {k_wall:>10.1} {k_rss:>12.1} {k_cpu:>12.1}",
        "troupe -p, reused workspace and home"
    );
    let version = codex_version(&codex);
    let label = format!("codex exec ({version}), fresh home");
    println!(
        "{label:<44} {runs:>5} {c_wall:>10.1} {c_rss:>12.1} {c_cpu:>12.1} {:>16}",
        pressure(theirs_pressure)
    );
    let label = format!("codex exec ({version}), reused home");
    println!(
        "{label:<44} {runs:>5} {r_wall:>10.1} {r_rss:>12.1} {r_cpu:>12.1} {:>16}",
        pressure(reused_pressure)
    );
    println!("codex binary: {}", codex.display());
    println!(
        "SUMMARY vs_codex troupe_p50_ms={t_wall:.1} codex_p50_ms={c_wall:.1} ratio={ratio:.1} \
         cpu_ratio={cpu_ratio:.1} reused_home_p50_ms={r_wall:.1} \
         reused_home_ratio={reused_home_ratio:.1} troupe_reused_p50_ms={k_wall:.1} \
         reused_ratio={reused_ratio:.1} target={TARGET_RATIO}x {}",
        verdict(ratio >= TARGET_RATIO && reused_ratio >= TARGET_RATIO)
    );
    Ok(())
}
