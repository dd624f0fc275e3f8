//! Command-line flags and subcommands (Claude Code's names where they exist).

use crate::args_defer::Deferred;
use crate::mcp_files::McpScope;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub use crate::args_team::{
    TaskArgs, TaskCommand, TaskStatusArg, TeamArgs, TeamCommand, WorktreeArgs, WorktreeCommand,
};

const EXAMPLES: &str = "\
Examples:
  troupe                                   start the interactive REPL in this directory
  troupe -p \"list the files here\"          run one prompt headless and print the result
  echo \"fix the failing test\" | troupe -p   read the prompt from stdin
  troupe -p --output-format stream-json \"summarise src/\"   one JSON event per line
  troupe -p --allowedTools \"Bash(cargo test:*) Edit\" \"make the tests pass\"
  troupe --continue                        resume the latest session
  troupe sessions                          list the sessions here (troupe --resume picks one)
  troupe doctor                            check the settings, the model, the sandbox, the store
  troupe team status                       show the team roster from another terminal
  troupe team watch                        a live dashboard of the team (approve plans from it)
  troupe task list                         show the team's task board
  troupe mcp list                          the MCP servers of .mcp.json and the settings, checked
  troupe cron add \"in 10m\" \"check the build\"  a scheduled prompt for the lead (see troupe cron list)

Models: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL), or OPENAI_BASE_URL for any
OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio) plus OPENAI_API_KEY if it needs one.";

/// troupe — a coding-agent harness whose lead agent works with a team of persistent teammates.
#[derive(Debug, Parser)]
#[command(
    name = "troupe",
    version,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    // As Claude Code's parser: a flag given twice takes its last value.
    args_override_self = true,
    // `-v` too, as Claude Code spells it.
    disable_version_flag = true
)]
pub struct Cli {
    /// Print the version.
    #[arg(short = 'V', long = "version", short_alias = 'v', action = clap::ArgAction::Version)]
    version: Option<bool>,

    /// Run headless: answer the prompt (argument or stdin), print the result, exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt (headless), or a first message for the REPL.
    pub prompt: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options shared by the REPL and headless runs.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,

    /// Claude Code's further headless flags (the Agent SDK's).
    #[command(flatten)]
    pub contract: crate::args_contract::ContractArgs,

    /// The rest of the Agent SDKs' flags.
    #[command(flatten)]
    pub sdk: crate::args_sdk::SdkArgs,

    /// The rest of `claude --help`'s flags.
    #[command(flatten)]
    pub claude: crate::args_claude::ClaudeArgs,

    /// Output format for headless runs.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// Maximum model calls in one headless turn.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Rules for tools allowed without asking, e.g. "Bash(git diff:*) Edit" (repeatable).
    #[arg(long = "allowedTools", alias = "allowed-tools")]
    pub allowed_tools: Vec<String>,

    /// Rules for tools that are always refused, e.g. "Bash(rm:*)" (repeatable).
    #[arg(long = "disallowedTools", alias = "disallowed-tools")]
    pub disallowed_tools: Vec<String>,

    /// Continue the latest session in this workspace.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,

    /// Resume the session with this id; without one, pick from a list (on a terminal; `troupe
    /// sessions` lists them).
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,

    /// Show tool calls and progress on stderr in headless text mode.
    #[arg(long)]
    pub verbose: bool,

    /// Replace troupe's opening identity line of the lead's system prompt with this text (the
    /// environment, tool guidance, memory and team sections stay).
    #[arg(long)]
    pub system_prompt: Option<String>,

    /// Text appended to the end of the lead's system prompt.
    #[arg(long)]
    pub append_system_prompt: Option<String>,

    /// The team this lead works with (default: the workspace's team `default`, whose board
    /// `troupe task` shares; while another lead runs on it, a team of its own named after the
    /// session; a named team has one lead at a time).
    #[arg(long, env = "TROUPE_TEAM")]
    pub team: Option<String>,

    /// Seconds a headless run waits for its team to settle before giving up (non-zero exit).
    #[arg(long, default_value_t = 1800)]
    pub team_timeout: u64,

    /// Where spawned teammates run: in-process (default) or process (setting `teammate_mode`).
    #[arg(long)]
    pub teammate_mode: Option<String>,

    /// Who answers teammates' permission questions: user (the person at the REPL, its
    /// default) or lead (the lead model, the default headless, where nobody is asked).
    /// Setting `teammate_permissions`.
    #[arg(long)]
    pub teammate_permissions: Option<String>,
}

/// Headless output formats (as `claude -p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final result text.
    Text,
    /// One JSON result object at the end.
    Json,
    /// One JSON event per line as things happen.
    StreamJson,
}

/// Subcommands.
// Parsed once per process; boxing the teammate's flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Look at or talk to a team from another terminal.
    Team(Deferred<TeamArgs>),
    /// Run one teammate as its own process on the team's store (joins, or rejoins after a crash).
    Teammate(Deferred<TeammateArgs>),
    /// The OS sandbox bash commands run under.
    Sandbox(Deferred<SandboxArgs>),
    /// Which settings files are read here and what they add up to (rules, hooks, MCP servers,
    /// memory, skills, agent definitions).
    Config(Deferred<ConfigArgs>),
    /// The team's task board from another terminal: list, show, create, claim, update, complete.
    Task(Deferred<TaskArgs>),
    /// The workspace's git worktrees (.troupe/worktrees/<name>, branch wt/<name>).
    Worktree(Deferred<WorktreeArgs>),
    /// The MCP servers this workspace configures.
    Mcp(Deferred<McpArgs>),
    /// Scheduled prompts (.troupe/cron.json): list, add, remove — from any terminal.
    Cron(Deferred<CronArgs>),
    /// The lead's sessions here, newest first: id, start, first prompt, turns, cost
    /// (`troupe --resume <id>` goes on with one).
    Sessions(Deferred<SessionsArgs>),
    /// Is everything ready here? The settings files parse, the model answers, the sandbox
    /// works, the team store is writable — each with a fix (exit 0 when all pass).
    Doctor(Deferred<DoctorArgs>),
    /// Whether this folder is trusted and what it would run (hooks, MCP servers, statusLine,
    /// environment, loosening settings); `--yes` trusts it, `--revoke` forgets the answer.
    Trust(Deferred<TrustArgs>),
    /// Plugins of local marketplaces: list, install, enable, disable (`enabledPlugins`).
    Plugin(Deferred<crate::args_plugin::PluginArgs>),
}

/// `troupe trust`
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Trust the folder as it is now (a change to what it defines asks again).
    #[arg(long, conflicts_with = "revoke")]
    pub yes: bool,
    /// Forget the answer: the next REPL start asks again.
    #[arg(long)]
    pub revoke: bool,
    /// Workspace directory (default: the one the current directory is in).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
}

/// `troupe doctor`
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the one the current directory is in).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Provider to check: anthropic or openai (default: inferred from the environment).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model to check (default: as a run would choose it).
    #[arg(long, env = "TROUPE_MODEL")]
    pub model: Option<String>,
}

/// `troupe sessions`
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print the sessions as JSON.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the one the current directory is in).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
}

/// `troupe cron …`
#[derive(Debug, Args)]
pub struct CronArgs {
    /// Team whose agents the prompts are for (default: the only running team; `cron list`
    /// shows every team's jobs unless it is given).
    #[arg(long, global = true, env = "TROUPE_TEAM")]
    pub team: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: CronCommand,
}

/// What to do with scheduled prompts.
#[derive(Debug, Subcommand)]
pub enum CronCommand {
    /// The team's scheduled prompts: id, schedule, target, next time, prompt.
    List,
    /// Schedule a prompt; a running lead delivers "[Scheduled] <prompt>" to the target then.
    Add {
        /// A five-field cron expression ("*/10 * * * *", local time), a delay ("in 90s",
        /// "in 3m") or an RFC 3339 time.
        schedule: String,
        /// What the target agent is told.
        prompt: String,
        /// The agent to tell: "lead" or a teammate's name.
        #[arg(long, default_value = "lead")]
        to: String,
    },
    /// Remove a scheduled prompt by id.
    Remove {
        /// The id (`cron-…`).
        id: String,
    },
}

/// `troupe config`
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Extra settings, as the lead's `--settings` takes them.
    #[arg(long)]
    pub settings: Option<String>,
}

/// `troupe mcp …`
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

/// What to do about MCP servers.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Every configured server (`.mcp.json`, settings `mcpServers`, --mcp-config): started and
    /// checked now, with its status, transport, tool count and last error.
    List {
        /// Print the servers as JSON.
        #[arg(long)]
        json: bool,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Extra settings, as for a run.
        #[arg(long)]
        settings: Option<String>,
        #[command(flatten)]
        mcp: McpFlags,
    },
    /// Add a server, as `claude mcp add` does: `troupe mcp add <name> -- <command> [args…]`, or
    /// `troupe mcp add --transport http <name> <url>` (written to the --scope's file).
    Add {
        /// The server's name.
        name: String,
        /// The command (stdio) or the URL (sse, http).
        command_or_url: String,
        /// The command's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
        /// How the server is reached: stdio, sse or http.
        #[arg(short = 't', long, default_value = "stdio")]
        transport: String,
        /// A variable for a stdio server, KEY=value (repeatable).
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A header for an sse or http server, "Name: value" (repeatable).
        #[arg(short = 'H', long = "header", value_name = "HEADER")]
        header: Vec<String>,
        /// Where: local (~/.claude.json, this workspace only; the default), project
        /// (.mcp.json) or user (~/.claude.json, every workspace).
        #[arg(short = 's', long, value_enum, default_value_t = McpScope::Local)]
        scope: McpScope,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Add a server from its JSON (`'{"type":"stdio","command":"npx","args":[…]}'`).
    AddJson {
        /// The server's name.
        name: String,
        /// The server's entry as JSON.
        json: String,
        /// Where: local (the default), project or user.
        #[arg(short = 's', long, value_enum, default_value_t = McpScope::Local)]
        scope: McpScope,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// One server's configuration and the scope it comes from.
    Get {
        /// The server's name.
        name: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Remove a server (from --scope, else from the one scope that has it).
    Remove {
        /// The server's name.
        name: String,
        /// Only from this scope: local, project or user.
        #[arg(short = 's', long, value_enum)]
        scope: Option<McpScope>,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

/// Where MCP servers are configured besides `.mcp.json` and the settings (Claude Code's flags).
#[derive(Debug, Args, Clone, Default)]
pub struct McpFlags {
    /// MCP servers from a file or inline JSON in `.mcp.json`'s shape (repeatable); these win
    /// over the same names elsewhere.
    #[arg(long = "mcp-config", value_name = "FILE_OR_JSON")]
    pub mcp_config: Vec<String>,

    /// Use only the servers of --mcp-config, ignoring `.mcp.json` and the settings'.
    #[arg(long = "strict-mcp-config")]
    pub strict_mcp_config: bool,
}

/// `troupe sandbox …`
#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    pub command: SandboxCommand,
}

/// What to do about the sandbox.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// What this machine supports: Landlock and its ABI, what read-only and workspace-write
    /// commands may write, and a proof by a sandboxed child (exit 0 when the sandbox works).
    Check {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

/// `troupe teammate …`
#[derive(Debug, Args, Clone)]
pub struct TeammateArgs {
    /// Team to join (default: the only running team).
    #[arg(long, env = "TROUPE_TEAM")]
    pub team: Option<String>,
    /// Teammate name.
    #[arg(long, required_unless_present = "config_file")]
    pub name: Option<String>,
    /// Role (default: the roster's, else "teammate").
    #[arg(long)]
    pub role: Option<String>,
    /// First instructions (omit to rejoin from the transcript).
    #[arg(long)]
    pub prompt: Option<String>,
    /// A rule allowing calls without asking, taken exactly as written (repeatable); the lead
    /// passes on each of its own, so the teammate obeys the same rules.
    #[arg(long = "allow-rule")]
    pub allow_rules: Vec<String>,
    /// A rule making calls ask first, exactly as written (repeatable).
    #[arg(long = "ask-rule")]
    pub ask_rules: Vec<String>,
    /// A rule refusing calls, exactly as written (repeatable).
    #[arg(long = "deny-rule")]
    pub deny_rules: Vec<String>,
    /// The teammate's lease as the lead that started this process handed it down (a
    /// descriptor number on the file store, a token on NATS; internal: without it the
    /// teammate takes its lease itself).
    #[arg(long, hide = true)]
    pub lease: Option<String>,
    /// When another host holds the teammate's lease, exit at once instead of waiting for the
    /// lease to lapse.
    #[arg(long)]
    pub no_wait: bool,
    /// Which settings files to read: a comma-separated list of user, project, local (as the
    /// lead's `--setting-sources`; it also decides which memory files the teammate reads).
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// The whole configuration as a lead writes it for its teammate processes, in a JSON file
    /// (`-`: on standard input); it takes the place of the other options.
    #[arg(long, value_name = "PATH")]
    pub config_file: Option<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
}

impl TeammateArgs {
    /// The teammate's name (empty only before a `--config-file` is read).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}

/// Where and with what an agent works: shared by the lead and `troupe teammate`.
#[derive(Debug, Args, Clone)]
pub struct AgentArgs {
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,

    /// Where the team's state lives: `file` (the default, `.troupe/teams/` in the workspace) or
    /// a NATS JetStream server shared by several machines, `nats://[user:password@]host:4222`
    /// (setting `store`; teammate processes get the lead's).
    #[arg(long, env = "TROUPE_STORE")]
    pub store: Option<String>,

    /// Model name (default depends on the provider; env TROUPE_MODEL).
    #[arg(long, env = "TROUPE_MODEL")]
    pub model: Option<String>,

    /// Provider: anthropic or openai (default: inferred from the environment).
    #[arg(long)]
    pub provider: Option<String>,

    /// Permission mode: default, acceptEdits, plan, bypassPermissions (default: the settings'
    /// `permissions.defaultMode`, else default).
    #[arg(long)]
    pub permission_mode: Option<String>,

    /// Extra settings, highest precedence: a settings file, or inline JSON starting with `{`.
    #[arg(long)]
    pub settings: Option<String>,

    /// Output token limit per model call.
    #[arg(long, default_value_t = 8192)]
    pub max_tokens: u32,

    /// The model's context window in tokens, for a model troupe does not know (a local
    /// server); compaction works against it (default: the `contextWindow` setting, else the
    /// known figure of the model, else 128000).
    #[arg(long, value_parser = parse_context_window)]
    pub context_window: Option<u64>,

    /// More directories the tools may use besides the workspace, by absolute path (read, edit,
    /// search; commands allowed to write may write there); setting
    /// `permissions.additionalDirectories`.
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1..)]
    pub add_dir: Vec<PathBuf>,

    #[command(flatten)]
    pub mcp: McpFlags,
}

/// `--context-window`: a number of tokens no smaller than a system prompt needs.
fn parse_context_window(text: &str) -> Result<u64, String> {
    let n: u64 = text
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{text}` is not a number of tokens"))?;
    if n < troupe_settings::MIN_CONTEXT_WINDOW {
        return Err(format!(
            "{n} tokens is too small: a context window is at least {} tokens",
            troupe_settings::MIN_CONTEXT_WINDOW
        ));
    }
    Ok(n)
}
