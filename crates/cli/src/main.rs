//! The `troupe` binary: parses flags, then runs the REPL, a headless prompt, or a subcommand.

mod args;
mod commands;
mod cost;
mod headless;
mod render;
mod repl;
mod repl_ask;
mod repl_input;
mod settings;
mod setup;

use clap::Parser;

fn main() {
    let cli = args::Cli::parse();
    init_logging();
    let result = match &cli.command {
        Some(args::Command::Team(team)) => commands::team::run(team),
        Some(args::Command::Teammate(mate)) => commands::teammate::run(mate),
        None if cli.print => headless::run(&cli),
        None => repl::run(&cli),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Errors may quote model input or file contents.
            eprintln!(
                "troupe: error: {}",
                render::sanitize::terminal(&format!("{e:#}"))
            );
            std::process::exit(1);
        }
    }
}

/// Warnings go to stderr; `TROUPE_LOG=debug` (or any filter) turns on more detail.
fn init_logging() {
    let filter = std::env::var("TROUPE_LOG").unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
