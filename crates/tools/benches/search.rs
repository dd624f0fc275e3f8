//! The grep and glob tools against ripgrep on one generated workspace, in one run: a tree of
//! `--files` files (100,000 by default: 1,000 folders of 100 source files, a `.gitignore`d build
//! folder among them), searched by the grep tool (`files_with_matches` and `content` of a word
//! a few files hold) and by `rg -l` / `rg -n`, and listed by the glob tool (`**/*.rs`) and by
//! `rg --files -g '*.rs'`; each interleaved run by run, medians printed with their ratios, of
//! the wall time and of the CPU time (the tool's: this process's user and system time across
//! the call; ripgrep's: its own, as its parent sees it), the CPU time being much steadier on a
//! shared machine. Target: the tools within 1.1× of ripgrep. Without `rg` on the PATH only the
//! tools are timed.
//!
//! Run: `cargo bench -p troupe-tools --bench search [-- --files 100000 --runs 9 --only glob]`
//! (`--only WORD`: the rows whose name holds it).
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_tools::glob::GlobTool;
use troupe_tools::grep::GrepTool;
use troupe_tools::{Tool, ToolContext, Workspace};

const TARGET: f64 = 1.1;

/// One row: its name, the tool and its input, and ripgrep's arguments for the same search.
type Case<'a> = (&'a str, Box<dyn Tool>, serde_json::Value, Vec<&'a str>);

fn arg_text(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn arg(name: &str, default: usize) -> usize {
    arg_text(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Writes `files` source files of ~2 KB each; every 997th holds the needle.
fn build(root: &Path, files: usize) {
    let body: String = (0..40)
        .map(|i| format!("fn function_{i}(x: u32) -> u32 {{ x.wrapping_mul({i}) + 7 }}\n"))
        .collect();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    for n in 0..files {
        let dir = root.join(format!("src/mod_{:04}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let extra = match n % 997 {
            0 => "// needle_in_the_haystack\n",
            _ => "",
        };
        let ext = if n % 3 == 0 { "rs" } else { "txt" };
        std::fs::write(dir.join(format!("f{n}.{ext}")), format!("{body}{extra}")).unwrap();
    }
    let ignored = root.join("target/debug");
    std::fs::create_dir_all(&ignored).unwrap();
    std::fs::write(ignored.join("needle.rs"), "needle_in_the_haystack\n").unwrap();
}

/// The user and system time used so far by this process (`children`: false) or by its waited-for
/// children (true).
fn cpu(children: bool) -> Duration {
    let who = match children {
        true => libc::RUSAGE_CHILDREN,
        false => libc::RUSAGE_SELF,
    };
    // SAFETY: getrusage writes the struct it is given, which lives through the call.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(who, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn rg(root: &Path, args: &[&str]) -> Option<usize> {
    let out = Command::new("rg")
        .args(args)
        .current_dir(root)
        .output()
        .ok()?;
    Some(out.stdout.iter().filter(|b| **b == b'\n').count())
}

fn main() {
    let files = arg("--files", 100_000);
    let runs = arg("--runs", 9);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let started = Instant::now();
    build(root, files);
    eprintln!(
        "built {files} files in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(Arc::new(Workspace::new(root).unwrap()), "bench");
    let has_rg = rg(root, &["--version"]).is_some();
    let cases: [Case; 3] = [
        (
            "grep files_with_matches",
            Box::new(GrepTool),
            json!({"pattern": "needle_in_the_haystack"}),
            vec!["--no-require-git", "-l", "needle_in_the_haystack"],
        ),
        (
            "grep content",
            Box::new(GrepTool),
            json!({"pattern": "needle_in_the_haystack", "output_mode": "content"}),
            vec!["--no-require-git", "-n", "needle_in_the_haystack"],
        ),
        (
            "glob **/*.rs",
            Box::new(GlobTool),
            json!({"pattern": "**/*.rs"}),
            vec!["--no-require-git", "--files", "-g", "*.rs"],
        ),
    ];
    println!("{files} files, {runs} runs each, interleaved (median ms; wall, then CPU)");
    println!(
        "{:<26}{:>10}{:>10}{:>8}{:>10}{:>10}{:>8}",
        "", "troupe", "rg", "ratio", "cpu", "rg cpu", "ratio"
    );
    let only = arg_text("--only").unwrap_or_default();
    for (name, tool, input, rg_args) in cases.iter().filter(|c| c.0.contains(&only)) {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let (mut ours_cpu, mut theirs_cpu) = (Vec::new(), Vec::new());
        for round in 0..runs + 1 {
            let (t, c) = (Instant::now(), cpu(false));
            let out = runtime.block_on(tool.call(input.clone(), &ctx));
            let (ours_took, ours_used) = (t.elapsed(), cpu(false) - c);
            assert!(!out.is_error, "{name}: {}", out.content);
            let (t, c) = (Instant::now(), cpu(true));
            let lines = if has_rg { rg(root, rg_args) } else { None };
            let (theirs_took, theirs_used) = (t.elapsed(), cpu(true) - c);
            if round == 0 {
                // Warm-up, and the same answer: as many results as ripgrep finds.
                if let Some(lines) = lines {
                    let shown = out.content.lines().filter(|l| !l.starts_with('(')).count();
                    assert_eq!(
                        shown.min(1_000),
                        lines.min(1_000),
                        "{name}: {}",
                        out.content
                    );
                }
                continue;
            }
            ours.push(ours_took);
            theirs.push(theirs_took);
            ours_cpu.push(ours_used);
            theirs_cpu.push(theirs_used);
        }
        let (ours, ours_cpu) = (median(ours), median(ours_cpu));
        match has_rg {
            true => {
                let (theirs, theirs_cpu) = (median(theirs), median(theirs_cpu));
                let (ratio, cpu_ratio) = (ours / theirs, ours_cpu / theirs_cpu);
                let verdict = if ratio <= TARGET { "ok" } else { "over" };
                println!(
                    "{name:<26}{ours:>10.1}{theirs:>10.1}{ratio:>7.2}×{ours_cpu:>10.1}\
                     {theirs_cpu:>10.1}{cpu_ratio:>7.2}× {verdict} (target ≤ {TARGET}×)"
                );
            }
            false => println!(
                "{name:<26}{ours:>10.1}{:>10}{:>8}{ours_cpu:>10.1}",
                "no rg", ""
            ),
        }
    }
}
