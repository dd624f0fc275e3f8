//! What this process is, resolved once from the command line: the REPL, a headless run, a
//! teammate process, an MCP command that starts servers, the dashboard, or a subcommand. Every
//! start-up decision (signals, pipes, logging) and the run itself hang off it.

use crate::args::{Cli, Command, TeamCommand};
use crate::signals::CtrlC;
use anyhow::Result;

/// The kind of process.
pub enum Mode<'a> {
    /// The interactive REPL.
    Repl(&'a Cli),
    /// `-p` (or the SDK's stream-json input): headless.
    Print(&'a Cli),
    /// A teammate process started by a lead.
    Teammate(&'a crate::args::TeammateArgs),
    /// `troupe mcp …`, which may start servers.
    Mcp(&'a crate::args::McpArgs),
    /// A subcommand that reads or writes state and ends (the dashboard among them).
    Command(&'a Command),
}

impl<'a> Mode<'a> {
    /// The mode `cli` asks for.
    pub fn of(cli: &'a Cli) -> Mode<'a> {
        match &cli.command {
            None if cli.print => Mode::Print(cli),
            None => Mode::Repl(cli),
            Some(Command::Teammate(mate)) => Mode::Teammate(mate),
            Some(Command::Mcp(mcp)) => Mode::Mcp(mcp),
            Some(command) => Mode::Command(command),
        }
    }

    /// What Ctrl-C means (`None`: the default, the process ends).
    pub fn ctrl_c(&self) -> Option<CtrlC> {
        match self {
            Mode::Repl(_) => Some(CtrlC::Interrupts),
            // Headless (its first press interrupts the turn, `-p` asks for that itself),
            // teammates, and MCP servers end with their tool processes.
            Mode::Print(_) | Mode::Teammate(_) | Mode::Mcp(_) => Some(CtrlC::Ends),
            Mode::Command(_) => None,
        }
    }

    /// Whether the process owns tool processes: it then ends them before exiting, so a closed
    /// pipe is a failed write rather than SIGPIPE.
    pub fn owns_tool_processes(&self) -> bool {
        !matches!(self, Mode::Command(_))
    }

    /// A full-screen dashboard owns the terminal: log lines would tear it.
    pub fn quiet(&self) -> bool {
        matches!(
            self,
            Mode::Command(Command::Team(team)) if matches!(team.command, TeamCommand::Watch)
        )
    }

    /// `--debug [targets]` and its Claude Code spellings, for a session.
    pub fn debug(&self) -> Option<&'a str> {
        match self {
            Mode::Repl(cli) | Mode::Print(cli) => cli
                .run
                .contract
                .debug
                .as_deref()
                .or(cli.run.sdk.debug())
                .or(cli.run.claude.mcp_debug.then_some("debug")),
            _ => None,
        }
    }

    /// `--debug-file`, for a session.
    pub fn debug_file(&self) -> Option<&'a std::path::Path> {
        match self {
            Mode::Repl(cli) | Mode::Print(cli) => cli.run.sdk.debug_file.as_deref(),
            _ => None,
        }
    }

    /// Whether log lines go to the log file: the REPL's prompt owns the terminal unless
    /// `--debug` asks for them, and `--debug-file` names a file.
    pub fn logs_to_file(&self) -> bool {
        self.debug_file().is_some() || (matches!(self, Mode::Repl(_)) && self.debug().is_none())
    }

    /// Runs the process and returns its exit code.
    pub fn run(self) -> Result<i32> {
        use crate::commands;
        match self {
            Mode::Repl(cli) => crate::repl::run(cli),
            // The Agent SDK's session: headless, driven over stdin.
            Mode::Print(cli)
                if cli.run.contract.input_format
                    == crate::args_contract::InputFormat::StreamJson =>
            {
                crate::control::run(cli)
            }
            Mode::Print(cli) => crate::headless::run(cli),
            Mode::Teammate(mate) => commands::teammate::run(mate),
            Mode::Mcp(mcp) => commands::mcp::run(mcp),
            Mode::Command(command) => match command {
                Command::Team(team) => commands::team::run(team),
                Command::Sandbox(sandbox) => commands::sandbox::run(sandbox),
                Command::Config(config) => commands::config::run(config),
                Command::Worktree(w) => crate::block_on(commands::worktree::run(w)).and_then(|r| r),
                Command::Task(task) => crate::block_on(commands::task::run(task)).and_then(|r| r),
                Command::Cron(cron) => commands::cron::run(cron),
                Command::Sessions(s) => commands::sessions::run(s),
                Command::Doctor(d) => commands::doctor::run(d),
                Command::Trust(t) => commands::trust::run(t),
                Command::Plugin(p) => commands::plugin::run(p),
                Command::Teammate(mate) => commands::teammate::run(mate),
                Command::Mcp(mcp) => commands::mcp::run(mcp),
            },
        }
    }
}
