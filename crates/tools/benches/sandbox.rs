//! What the OS sandbox adds to one bash call: `true` run through the
//! bash tool unsandboxed, in the read-only sandbox and in the workspace-write sandbox, many times
//! each — in an empty directory (Landlock and seccomp only) and in a repository with every
//! protected file and a Read-denied tree (a private mount namespace with its mounts too); prints
//! median and p90 wall time per call. Target: the sandbox adds < 2 ms to a call.
//!
//! A `spawn only` row gives the floor: `bash -c true` spawned and waited for the way the tool did
//! before it owned its processes (no marker, no sweep, no sandbox).
//!
//! Run: `cargo bench -p troupe-tools --bench sandbox [-- --runs 300]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_tools::{BashTool, Concealed, Sandbox, SandboxConfig, Tool, ToolContext, Workspace};

const TARGET_ADDED_MS: f64 = 2.0;
const WARMUP: usize = 10;

fn runs() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

/// Median and p90 in milliseconds of timed samples.
fn summary(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    (quantile(&times, 0.5), quantile(&times, 0.9))
}

async fn spawn_only() -> Result<(), String> {
    let status = tokio::process::Command::new("bash")
        .args(["-c", "true"])
        .process_group(0)
        .status()
        .await
        .map_err(|e| e.to_string())?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| "bash -c true failed".to_string())
}

async fn tool_call(ctx: &ToolContext) -> Result<(), String> {
    let output = BashTool.call(json!({"command": "true"}), ctx).await;
    match output.is_error {
        false => Ok(()),
        true => Err(format!("the call failed: {}", output.content)),
    }
}

fn main() -> Result<(), String> {
    troupe_tools::process::become_subreaper().map_err(|e| e.to_string())?;
    if !troupe_tools::sandbox::support().is_available() {
        return Err(format!(
            "no usable Landlock here: {:?}",
            troupe_tools::sandbox::support()
        ));
    }
    let runs = runs();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let workspace = Arc::new(Workspace::new(dir.path()).map_err(|e| e.to_string())?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // A repository with every protected file and a denied tree: what the mount namespace costs.
    let repo_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = repo_dir.path();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo)
        .status()
        .map_err(|e| e.to_string())?;
    if !git.success() {
        return Err("git init failed".into());
    }
    for (path, text) in [
        (".claude/settings.json", "{}"),
        (".troupe/settings.json", "{}"),
        (".mcp.json", "{}"),
        ("secrets/key", "s"),
    ] {
        let path = repo.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| e.to_string())?;
    }
    let repo_ws = Arc::new(Workspace::new(repo).map_err(|e| e.to_string())?);
    let concealed = Concealed::new(|path, root| path.starts_with(root.join("secrets")))
        .with_bases(|root| vec![root.join("secrets")]);
    let rows: Vec<(&str, Sandbox, bool, bool)> = vec![
        ("unsandboxed", Sandbox::Unsandboxed, false, false),
        ("read-only", Sandbox::ReadOnly, false, false),
        ("workspace-write", Sandbox::WorkspaceWrite, false, false),
        (
            "ww, repo (protected mounts)",
            Sandbox::WorkspaceWrite,
            true,
            false,
        ),
        ("ro, repo + Read deny", Sandbox::ReadOnly, true, true),
        ("ww, repo + Read deny", Sandbox::WorkspaceWrite, true, true),
    ];
    let levels: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let contexts: Vec<ToolContext> = rows
        .iter()
        .map(|(_, level, in_repo, deny)| {
            let ws = if *in_repo {
                repo_ws.clone()
            } else {
                workspace.clone()
            };
            let mut ctx = ToolContext::new(ws, "bench");
            ctx.sandbox = *level;
            if *deny {
                ctx.sandbox_config = Arc::new(SandboxConfig {
                    concealed: concealed.clone(),
                    ..SandboxConfig::default()
                });
            }
            ctx
        })
        .collect();
    runtime.block_on(async {
        // Round robin, so a machine that gets busier mid-run weighs on every row alike.
        let mut floor = Vec::with_capacity(runs);
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); levels.len()];
        for round in 0..WARMUP + runs {
            let started = Instant::now();
            spawn_only().await?;
            if round >= WARMUP {
                floor.push(started.elapsed());
            }
            for (ctx, times) in contexts.iter().zip(samples.iter_mut()) {
                let started = Instant::now();
                tool_call(ctx).await?;
                if round >= WARMUP {
                    times.push(started.elapsed());
                }
            }
        }
        println!("bash call of `true`, {runs} runs each, interleaved (ms)");
        println!("{:<28} {:>8} {:>8}", "", "median", "p90");
        let (floor, floor_p90) = summary(floor);
        println!("{:<28} {floor:>8.2} {floor_p90:>8.2}", "spawn only (floor)");
        let mut medians = Vec::new();
        for (level, times) in levels.iter().zip(samples) {
            let (median, p90) = summary(times);
            println!("{level:<28} {median:>8.2} {p90:>8.2}");
            medians.push((*level, median));
        }
        let unsandboxed = medians[0].1;
        let mut ok = true;
        for (level, median) in &medians[1..] {
            let added = median - unsandboxed;
            let pass = added < TARGET_ADDED_MS;
            ok &= pass;
            println!(
                "{level} adds {added:.2} ms to a call (target < {TARGET_ADDED_MS} ms): {}",
                if pass { "ok" } else { "MISSED" }
            );
        }
        println!(
            "owning the call's processes (marker, sweep) adds {:.2} ms over the spawn floor",
            unsandboxed - floor
        );
        troupe_tools::sandbox::wait_retired(Duration::from_secs(5));
        match ok {
            true => Ok(()),
            false => Err("the sandbox costs more than the target".to_string()),
        }
    })
}
