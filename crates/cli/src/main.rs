//! The `troupe` binary: parses flags, then runs the REPL, a headless prompt, or a subcommand.
//! It owns the composition (which crates an agent is built from), the terminal and the flags.
//!
//! Must not hold: mechanisms of its own beyond wiring and presentation. The loop, teams, stores,
//! tools, hooks and MCP live in their crates; this one only connects and renders them.

mod api_key_helper;
mod args;
mod args_claude;
mod args_contract;
mod args_defer;
mod args_plugin;
mod args_rules;
mod args_sdk;
mod args_team;
mod ask;
mod budget;
use troupe_checkpoint as checkpoint;
mod claude_subcommands;
mod commands;
mod compose;
mod control;
mod cost;
mod cron;
mod fallback;
mod features;
mod file_flag;
mod headless;
mod hook_events;
mod hook_services;
mod hooks;
mod lead_agent;
mod lead_run;
mod lead_wakes;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod libm_calls;
mod logfile;
mod mcp;
mod mcp_files;
mod mcp_json_choice;
mod mcp_prompt;
mod mode;
mod nats;
mod person_guard;
mod plugins;
mod prompt_images;
#[cfg(test)]
mod reference;
mod render;
mod repl;
mod repl_input;
mod repl_lists;
mod run_report;
mod script_front;
mod secrets;
mod settings;
mod settings_warnings;
mod setup;
mod signals;
mod slash;
mod slash_body;
mod store;
mod structured_output;
mod subagents;
mod team_leftover;
mod team_pick;
mod telemetry;
use troupe_term as term;
use troupe_trust as trust;
mod waiting;
mod workspace;

use clap::Parser;

/// Runs `fut` to completion on a small current-thread runtime of its own: how a command that
/// is synchronous by nature (`troupe task list`, `doctor`, `team status`) reaches the async
/// team store. Never called from inside a runtime.
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> anyhow::Result<F::Output> {
    Ok(commands::current_thread_runtime()?.block_on(fut))
}

fn main() {
    // `troupe --version` (or `-V`) alone is answered before anything else: clap's whole command
    // tree, signals and logging cost more than the answer (under 3 ms).
    if version_only(std::env::args_os()) {
        use std::io::Write;
        // A closed pipe is no error here: nothing else is left to do.
        let _ = writeln!(
            std::io::stdout().lock(),
            "troupe {}",
            env!("CARGO_PKG_VERSION")
        );
        return;
    }
    // Before the first thread starts: glibc picks a thread's arena when it first allocates.
    few_malloc_arenas();
    // Also before the first thread: the credentials leave the environment a tool call could
    // read (`/proc/<pid>/environ`) for troupe's memory.
    secrets::take_from_environment();
    // A closed pipe (`troupe team status | head -1`) ends a subcommand as it ends `ls`: quietly,
    // by SIGPIPE, never with a panic at the next print. Runs that own tool processes (the REPL,
    // headless, teammates) ignore it again below and treat a failed write as nobody reading.
    signals::pipe_ends_quietly(true);
    let line: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `troupe update` out of Claude Code habit: an error, never a prompt for a REPL.
    if let Some(refusal) = claude_subcommands::refusal(&line) {
        eprintln!("troupe: error: {refusal}");
        std::process::exit(2);
    }
    let mut cli = args::Cli::parse_from(args_rules::spread_rule_lists(line));
    // The Agent SDK starts Claude Code with `--input-format stream-json` and no `-p`: that
    // input format is a headless session whatever the other flags say.
    cli.print |= cli.run.contract.input_format == args_contract::InputFormat::StreamJson;
    let mode = mode::Mode::of(&cli);
    if mode.owns_tool_processes() {
        signals::pipe_ends_quietly(false);
    }
    // First, while troupe has one thread: the others inherit the blocked signals.
    if let Some(ctrl_c) = mode.ctrl_c() {
        if let Err(e) = signals::install(ctrl_c) {
            eprintln!("troupe: error: {e:#}");
            std::process::exit(1);
        }
    }
    // `--debug-file`: the log goes there from the first line on.
    if let Some(path) = mode.debug_file() {
        if let Err(e) = logfile::open(path) {
            eprintln!("troupe: error: --debug-file {}: {e}", path.display());
            std::process::exit(2);
        }
    }
    init_logging(mode.debug(), mode.quiet(), mode.logs_to_file());
    // Same-user processes (a tool call among them) may not read troupe's memory, environment
    // or descriptors through /proc or ptrace.
    if let Err(err) = troupe_tools::process::become_undumpable() {
        tracing::warn!(error = %err, "cannot make troupe undumpable");
    }
    // Orphans of tool calls (double-forked daemons) come back to troupe, which ends them.
    if let Err(err) = troupe_tools::process::become_subreaper() {
        tracing::warn!(error = %err, "cannot become the child subreaper; detached tool processes may outlive their call");
    }
    let result = mode.run();
    telemetry::finish();
    match result {
        Ok(code) => signals::exit(code),
        Err(e) => {
            // Errors may quote model input or file contents.
            let code = match e.downcast_ref::<trust::Refused>() {
                Some(_) => trust::EXIT_UNTRUSTED,
                None => 1,
            };
            eprintln!(
                "troupe: error: {}",
                render::sanitize::terminal(&format!("{e:#}"))
            );
            signals::exit(code);
        }
    }
}

/// glibc's malloc arenas at most, unless `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` says otherwise.
/// Its default (8 per CPU) gives each of the lead's ~34 threads (2 async workers, up to 32
/// blocking ones for store calls) an arena of its own, up to 16 on 2 CPUs, and each keeps
/// the high-water mark of what was freed in it: at 1,000 teammates 15 arenas held 60 MiB for
/// ~37 MiB of live heap (team_rss peak 79.5 MiB). The allocating threads that run at once are
/// the 2 async workers (the blocking ones mostly wait on the disk), and most of their
/// allocations are served from glibc's per-thread caches without the arena's lock: one arena
/// costs no measurable contention (team_rss wall and CPU unchanged) and holds 1.2 MiB less than
/// two at 1,000 teammates (37.7–38.2 against 38.4–39.5 MiB), where the second arena kept 9 MiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENAS: libc::c_int = 1;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`]; call it while troupe has one thread.
fn few_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let told = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
        if !told {
            // SAFETY: mallopt only sets a malloc parameter; no thread allocates meanwhile.
            unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) };
        }
    }
}

/// Whether the arguments are exactly `--version` or `-V` (what clap would answer the same way).
fn version_only(mut args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let _program = args.next();
    matches!(
        (args.next(), args.next()),
        (Some(a), None) if a == "--version" || a == "-V" || a == "-v"
    )
}

/// Warnings go to stderr; `TROUPE_LOG=debug` (or any filter) or `--debug [targets]` turns on
/// more detail. The MCP client's transport details (a server without an event stream, a
/// closed pipe) are debug messages: what they mean reaches the user as a server's status or a
/// call's error result.
fn init_logging(debug: Option<&str>, quiet: bool, to_file: bool) {
    let default = if quiet { "off" } else { "warn" };
    let filter = match debug {
        // `--debug` alone, or `--debug api,hooks`-style target lists.
        Some("debug") => "debug".to_string(),
        Some(targets) => targets
            .split(',')
            .map(|t| format!("{}=debug", t.trim()))
            .collect::<Vec<_>>()
            .join(","),
        None => std::env::var("TROUPE_LOG").unwrap_or_else(|_| default.into()),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_target(false);
    let _ = match to_file {
        true => builder
            .with_writer(|| logfile::Writer)
            .with_ansi(false)
            .try_init(),
        false => builder
            .with_writer(std::io::stderr)
            .without_time()
            .try_init(),
    };
}
