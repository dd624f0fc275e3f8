//! Shared by the bench binaries: running the release `troupe` binary as a child and measuring
//! its wall time and peak resident set size (from `wait4`'s rusage, so nothing needs
//! installing), plus small statistics helpers.
#![allow(dead_code)]

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use troupe_testkit::{FakeServer, Reply, Step};

/// Scripts every lead request: the first call asks for `ls`, the second answers with the
/// listing it received, so each run is exactly two model calls and one bash round trip.
pub fn script_ls(server: &FakeServer) {
    server.set_fallback(|req| match req.last_tool_result() {
        None => Step::tool("bash", serde_json::json!({"command": "ls"})),
        Some((output, _)) => {
            let files: Vec<&str> = output
                .lines()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("exit code"))
                .collect();
            Step::reply(Reply::text(format!("files: {}", files.join(","))))
        }
    });
}

/// One measured headless run, `troupe -p "list files" --output-format json --permission-mode
/// MODE` in workspace `ws`, with its stdout and stderr kept in `ws/.out` and `ws/.err`
/// (returned with the figures).
pub fn run_list_files(
    ws: &Path,
    server: &FakeServer,
    mode: &str,
) -> io::Result<(Measured, PathBuf, PathBuf)> {
    let (out, err) = (ws.join(".out"), ws.join(".err"));
    let m = run_measured(
        troupe(ws, server).args([
            "-p",
            "list files",
            "--output-format",
            "json",
            "--permission-mode",
            mode,
        ]),
        &out,
        &err,
    )?;
    Ok((m, out, err))
}

/// What one measured run of a child process cost.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// From just before `spawn` to the moment `wait4` reaped the child.
    pub wall: Duration,
    /// Peak resident set size in KiB (`ru_maxrss`; on Linux the child's own peak, or its
    /// largest reaped descendant's if that was bigger).
    pub max_rss_kib: u64,
    /// The exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    /// CPU time, user plus system, of the child and the descendants it reaped (`wait4`'s
    /// rusage).
    pub cpu: Duration,
}

/// A `troupe` command (the binary Cargo built with this bench's profile, or the one
/// `TROUPE_BENCH_BIN` names, to compare another build in the same run) pointed at `server`
/// (Anthropic wire), run in workspace `ws` with a private `HOME` and no stdin.
pub fn troupe(ws: &Path, server: &FakeServer) -> Command {
    let exe =
        std::env::var_os("TROUPE_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_troupe").into());
    let mut cmd = Command::new(exe);
    cmd.current_dir(ws)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TROUPE_MODEL")
        .env_remove("TROUPE_LOG")
        .env("HOME", ws.join(".home"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env(troupe_testkit::AGENT_HEADER_VAR, "1")
        .stdin(Stdio::null());
    cmd
}

/// First argument that makes a bench binary act as the measuring wrapper (see [`run_measured`]).
const WRAP_FLAG: &str = "--measure-child";

/// Runs `cmd` to completion with stdout and stderr sent to the given files, and measures it.
///
/// `ru_maxrss` of a child starts at the RSS of the process that forked it (Linux copies the
/// parent's high-water mark at fork and keeps the old mm's at exec), and this bench process
/// holds the fake server. So the command runs under a fresh copy of this binary acting as a
/// small wrapper (like `/usr/bin/time`): it spawns the command, reaps it with `wait4`, and
/// writes the figures to a file.
pub fn run_measured(cmd: &mut Command, stdout: &Path, stderr: &Path) -> io::Result<Measured> {
    let report = stdout.with_extension("measured");
    let mut wrapper = Command::new(std::env::current_exe()?);
    wrapper
        .arg(WRAP_FLAG)
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::null())
        .stdout(File::create(stdout)?)
        .stderr(File::create(stderr)?);
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapper.env(key, v),
            None => wrapper.env_remove(key),
        };
    }
    let status = wrapper.status()?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "measuring wrapper failed: {status}"
        )));
    }
    let text = std::fs::read_to_string(&report)?;
    let fields: Vec<i64> = text
        .split_whitespace()
        .map(|f| f.parse().map_err(io::Error::other))
        .collect::<io::Result<_>>()?;
    match fields.as_slice() {
        [wall_ns, rss, code, cpu_ns] => Ok(Measured {
            wall: Duration::from_nanos(u64::try_from(*wall_ns).unwrap_or(0)),
            max_rss_kib: u64::try_from(*rss).unwrap_or(0),
            code: (*code >= 0).then(|| i32::try_from(*code).unwrap_or(-1)),
            cpu: Duration::from_nanos(u64::try_from(*cpu_ns).unwrap_or(0)),
        }),
        _ => Err(io::Error::other(format!("bad wrapper report: {text}"))),
    }
}

/// When this process was started as the measuring wrapper, runs the wrapped command (with the
/// inherited cwd, environment and stdio), writes `wall_ns max_rss_kib exit_code cpu_ns` to the report
/// file and exits; otherwise returns at once. Call first thing in `main`.
pub fn wrapper_main_if_requested() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != WRAP_FLAG) {
        return;
    }
    let code = match (args.get(2), args.get(3)) {
        (Some(report), Some(program)) => {
            match spawn_and_reap(Command::new(program).args(&args[4..])) {
                Ok(m) => {
                    let line = format!(
                        "{} {} {} {}\n",
                        m.wall.as_nanos(),
                        m.max_rss_kib,
                        m.code.unwrap_or(-1),
                        m.cpu.as_nanos()
                    );
                    match std::fs::write(report, line) {
                        Ok(()) => 0,
                        Err(e) => {
                            eprintln!("measure: cannot write report: {e}");
                            2
                        }
                    }
                }
                Err(e) => {
                    eprintln!("measure: cannot run {}: {e}", program.to_string_lossy());
                    2
                }
            }
        }
        _ => {
            eprintln!("usage: {WRAP_FLAG} REPORT PROGRAM [ARGS...]");
            2
        }
    };
    std::process::exit(code);
}

/// Spawns `cmd`, reaps it with `wait4`, and returns its wall time and rusage peak RSS.
fn spawn_and_reap(cmd: &mut Command) -> io::Result<Measured> {
    let started = Instant::now();
    let child = cmd.spawn()?;
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child; both out-pointers are valid for the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let wall = started.elapsed();
    // The child is reaped already; dropping the handle only closes what it holds.
    drop(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Ok(Measured {
        wall,
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        code,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
    })
}

/// The value at quantile `q` (0..=1) of `sorted`, nearest-rank.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> T {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The machine's CPU pressure now: the share of the last ten seconds in which some runnable
/// task waited for a CPU (`/proc/pressure/cpu`, `some avg10`, in %); `None` where the kernel
/// does not report it.
pub fn cpu_pressure() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// Waits, up to `limit`, until the CPU pressure is at most `quiet` % (a burst of other work, or
/// the runs just before, would otherwise land on the runs about to be measured), and returns
/// the pressure the runs start with.
pub fn wait_for_quiet_cpu(quiet: f64, limit: Duration) -> Option<f64> {
    let started = Instant::now();
    loop {
        let now = cpu_pressure()?;
        if now <= quiet || started.elapsed() >= limit {
            return Some(now);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// KiB as MiB, for printing.
pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The number after `--flag` on the command line (as `cargo bench -- --runs 50` passes it).
pub fn arg_value(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// "PASS"/"MISS" against a target, for the summary lines.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "MISS"
    }
}
