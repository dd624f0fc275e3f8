//! The interactive REPL: line editing and history, streamed output, Ctrl-C interrupts the
//! current turn but keeps the session, slash commands, and team mail that wakes the lead.

use crate::args::Cli;
use crate::ask::{Ask, ReplApprover};
use crate::render::notice::notice_line;
use crate::render::sanitize::{errln, out, outln};
use crate::render::text::{render, Sink};
use crate::setup::{lead, Crew, Lead};

mod export;
mod front;
mod more;
mod rewind;
mod status_line;
use crate::term::{Interrupts, LineReader, Printer};
use anyhow::{Context, Result};
use std::sync::Arc;
use tokio::sync::mpsc;
use troupe_agent::{Agent, AgentEvent, SessionEndReason};
use troupe_mcp::McpManager;
use troupe_team::{Notice, Team};
use troupe_tools::background::{describe_age, Jobs};

const HELP: &str = "\
Commands:
  /help    this help
  /team    the team roster: name, role, status, what each is doing, tokens
  /inbox   the lead's unread mail
  /bashes  the lead's background commands; /bashes kill <id> ends one
  /clear   start a fresh conversation in a new session (--resume <old id> brings the old one back)
  /compact [focus]  summarize the conversation so far and keep the recent steps
  /context how full the context window is, and when compaction steps in
  /cost    tokens used and approximate cost this session, per agent
  /status  version, model, workspace, session, team, mode, MCP servers, settings files
  /init    ask the lead to write a CLAUDE.md for this repository
  /review [focus]  ask the lead to review the current branch's changes (git diff)
  /security-review [focus]  ask the lead for a security review of the pending changes
  /config  the settings in force and the file each comes from
  /doctor  check the setup: settings, model, sandbox, store
  /msg <teammate> <text>  send a message to one teammate (replies arrive as mail)
  /model [name]  the lead's model; with a name, switch to it from the next request on
  /memory  the memory files read at start (AGENTS.md, CLAUDE.md, imports, MEMORY.md)
  /mcp     the MCP servers: status, transport, tools, last error
  /permissions  the permission mode and rules in force
  /agents  the agent definitions (subagents, teammates' profiles) and where each comes from
  /hooks   the hooks in force, by event, with the settings file of each
  /rewind  go back to before a prompt: its files, the conversation, or both (Esc Esc on an
           empty line too)
  /export [file|--clipboard]  the conversation as Markdown: to a file (default
           conversation-<date>.md in the workspace) or the clipboard
  /resume [n|id]  go on with a past session of this workspace (a numbered list to pick from)
  # note   append a note to the project memory file (AGENTS.md or CLAUDE.md)
  !cmd     run a shell command yourself; its output goes to the model with your next prompt
  @path    in a prompt: attach that file (or a folder's listing); @\"a b.md\" or @a\\ b.md
           for a path with spaces (Tab quotes it)
  /vim     vim keys at the prompt on or off (settings: \"editorMode\": \"vim\")
  /exit    leave (Ctrl-D works too)
Ctrl-R searches the prompt history (Ctrl-R again: older; Enter takes it; Esc gives the line
back). \\ + Enter or Shift-Enter adds a new line instead of sending.
Ctrl-C or Esc interrupts the agent's current turn; the session stays. Esc Esc clears the line;
Shift-Tab cycles the permission mode (default → acceptEdits → plan).
Mail from teammates, scheduled prompts and finished background commands wake the lead when it
is not busy.";

/// Runs the REPL and returns the exit code.
pub fn run(cli: &Cli) -> Result<i32> {
    let printer = Printer::new();
    let notice_printer = printer.clone();
    let colour = crate::commands::team_status::Paint::for_stdout()
        == crate::commands::team_status::Paint::Colour;
    let (approver, asks) = ReplApprover::new(printer.clone(), colour);
    let sink: troupe_team::NoticeSink = Some(Arc::new(move |n: Notice| {
        // Mail to the lead is shown once, when it reaches the lead's conversation (whoever
        // sent it, from whichever process); here only what the lead will not read.
        if !matches!(&n, Notice::Mail { to, .. } if to == troupe_team::LEAD) {
            notice_printer.line(&notice_line(&n))
        }
    }));
    let Lead {
        lease: _lease,
        mut agent,
        run,
        crew,
        runtime,
        ..
    } = lead(
        &cli.run,
        approver.clone(),
        sink,
        crate::trust::Asking::Person,
    )?;
    let Crew {
        team,
        mcp,
        subagents,
        custom,
        ..
    } = crew;
    approver.set_workspace(run.workspace.clone());
    let mut completions: Vec<String> = [
        "help",
        "team",
        "inbox",
        "bashes",
        "permissions",
        "agents",
        "hooks",
        "resume",
        "status",
        "init",
        "config",
        "doctor",
        "msg",
        "rewind",
        "export",
        "review",
        "security-review",
        "vim",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    completions.extend(custom.all_names(&mcp));
    completions.sort();
    completions.dedup();
    crate::term::complete::set_commands(completions);
    crate::term::complete::set_path_base(crate::repl_input::start_folder(&run.workspace));
    crate::logfile::redirect(&run.troupe_dir.join("logs"));
    let mode = crate::term::mode::ModeCell::new(agent.policy().mode, team.name());
    let (reader, interrupts) = LineReader::start(
        run.troupe_dir.join("history"),
        printer.clone(),
        colour,
        mode.clone(),
    )
    .context("starting the line editor")?;
    outln!(
        "troupe {} — {} ({}) in {}\nsession {} · team {} · /help for commands",
        env!("CARGO_PKG_VERSION"),
        run.model.model,
        run.model.provider,
        run.workspace.display(),
        run.session_id,
        team.name()
    );
    if !agent.messages().is_empty() {
        outln!("(resumed {} messages)", agent.messages().len());
    }
    let first = cli.prompt.clone();
    let cwd = crate::repl_input::start_folder(&run.workspace);
    // `--file`: attached to the first prompt, as the context a `!command` leaves is.
    let files = crate::file_flag::files(&cli.run.claude.file, &cwd)?;
    let view = crate::term::view::View::new(printer.clone(), colour, troupe_team::LEAD);
    if printer.is_live() {
        agent.watch_tool_output(view.progress_sink());
    }
    let status_line = status_line::StatusLine::of(agent.settings(), &printer);
    let vim = agent.settings().other.get("editorMode");
    crate::term::vim::set(vim.and_then(|v| v.as_str()) == Some("vim"));
    let io = Io {
        reader,
        interrupts,
        view,
        printer,
        asks,
        mode,
        context: files.blocks,
        context_images: files.images,
        cwd,
        command: None,
        answering: None,
        answer_asked: false,
        reading: false,
        entered: false,
        ticks: None,
        status_line,
        typed: None,
        turn_mode: None,
    };
    let session = Session {
        approver: approver.clone(),
        team: &team,
        mcp: &mcp,
        subagents: &subagents,
        troupe_dir: run.troupe_dir.clone(),
        model_config: run.model.clone(),
        custom: &custom,
        settings_arg: cli.run.agent.settings.clone(),
    };
    let result = runtime.block_on(front::drive(&mut agent, &session, io, first));
    runtime.block_on(agent.end_session(SessionEndReason::Exit));
    runtime.block_on(team.stop_all(crate::lead_run::STOP_LIMIT));
    mcp.shutdown();
    troupe_tools::process::end_all();
    result.map(|_| 0)
}

/// What slash commands look at besides the agent.
struct Session<'a> {
    /// `--settings`, which `/hooks` reads again to name each hook's file.
    settings_arg: Option<String>,
    approver: Arc<ReplApprover>,
    team: &'a Team,
    mcp: &'a McpManager,
    subagents: &'a troupe_catalog::subagent::SubagentExtension,
    troupe_dir: std::path::PathBuf,
    model_config: troupe_model::ModelConfig,
    custom: &'a crate::slash::Custom,
}

/// The terminal side of the REPL: the line editor, the printer, and pending questions.
struct Io {
    reader: LineReader,
    interrupts: Interrupts,
    printer: Printer,
    view: crate::term::view::View,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// The permission mode Shift-Tab chose, applied before each turn.
    mode: crate::term::mode::ModeCell,
    /// What `!` commands ran since the last prompt, for the model with the next one.
    context: Vec<String>,
    /// Images for the model with the next prompt (`--file`'s).
    context_images: Vec<troupe_protocol::ImageData>,
    /// Where `!` commands run and `@` paths are found: the folder troupe was started from.
    cwd: std::path::PathBuf,
    /// The custom command the running prompt named, ended with its work.
    command: Option<crate::slash::CommandTurn>,
    /// A permission question being answered (kept across a dropped wait).
    answering: Option<Ask>,
    /// Whether the answer to `answering` was asked for.
    answer_asked: bool,
    /// Whether the prompt reads lines during the running turn (mail woke the lead).
    reading: bool,
    /// Whether a line was entered during the running turn (one is taken, then keys wait).
    entered: bool,
    /// The progress line's clock while a turn runs (made on the runtime).
    ticks: Option<tokio::time::Interval>,
    /// The settings' `statusLine`, drawn under the prompt.
    status_line: Option<status_line::StatusLine>,
    /// The prompt running and the line the person typed for it, for `/rewind`'s list.
    typed: Option<(String, String)>,
    /// The lead's mode when the running turn began; a turn that ends in another one switched
    /// it itself (enter_plan_mode, exit_plan_mode).
    turn_mode: Option<troupe_agent::permissions::PermissionMode>,
}

/// The project's and the user's commands, for `/help`.
fn custom_help(session: &Session<'_>) -> String {
    match session.custom.commands.is_empty() {
        true => String::new(),
        false => format!(
            "\nCustom commands:\n{}",
            session.custom.commands.help().trim_end()
        ),
    }
}

/// `/bashes`: the lead's background commands, running first.
fn bashes_table(agent: &Agent) -> String {
    let jobs = agent.background().map(Jobs::list).unwrap_or_default();
    if jobs.is_empty() {
        return "no background commands (the agent starts them with bash run_in_background)\n"
            .to_string();
    }
    let now = troupe_agent::transcript::now_ms();
    let mut rows = vec![[
        "ID".to_string(),
        "STATUS".into(),
        "TIME".into(),
        "COMMAND".into(),
        "LOG".into(),
    ]];
    for job in jobs {
        let ran = job.ended_ms.unwrap_or(now).saturating_sub(job.started_ms);
        rows.push([
            job.id,
            job.status.describe(),
            describe_age(ran),
            job.command,
            job.log.display().to_string(),
        ]);
    }
    troupe_team::render::columns(&rows)
}

/// Every agent's tokens and cost: the lead live, its subagents, the teammates as the roster
/// shows them (updated after each of their model replies).
fn costs(
    agent: &Agent,
    session: &Session<'_>,
    roster: Option<&troupe_protocol::Roster>,
) -> Vec<crate::cost::AgentCost> {
    // Each call at the model it used (`/model` switches only the calls after it).
    crate::cost::breakdown(
        &crate::lead_run::lead_usage(agent),
        session.subagents.usage(),
        roster,
    )
}

async fn print_cost(agent: &Agent, session: &Session<'_>) {
    let roster = session.team.roster().await.ok();
    let rows = costs(agent, session, roster.as_ref());
    let (u, cost) = crate::cost::totals(&rows);
    outln!(
        "tokens{}: {} in, {} out, {} cache read, {} cache write · api time {:.1}s · ≈ ${:.4}",
        if u.estimated { " (estimated)" } else { "" },
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        agent.api_ms() as f64 / 1000.0,
        cost
    );
    out!("{}", crate::cost::table(&rows));
}

/// `/compact [focus]`: summarizes now; Ctrl-C abandons it and leaves the conversation as it was.
async fn compact(agent: &mut Agent, focus: &str, interrupts: &mut Interrupts) {
    let mut observe = |event: AgentEvent<'_>| render(Sink::Stdout, "", &event, false);
    outln!("(compacting…)");
    let result = tokio::select! {
        r = agent.compact(focus, &mut observe) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
        () = interrupts.next() => None,
    };
    match result {
        Some(Ok(Some(_))) => {}
        Some(Ok(None)) => outln!("(nothing to compact yet: the conversation is too short)"),
        Some(Err(e)) => errln!("error: {e}"),
        None => outln!("(interrupted; the conversation is unchanged)"),
    }
}
