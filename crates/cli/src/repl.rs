//! The interactive REPL: line editing and history, streamed output, Ctrl-C interrupts the
//! current turn but keeps the session, slash commands, and team mail that wakes the lead.

use crate::args::Cli;
use crate::ask::{Ask, ReplApprover};
use crate::render::sanitize::{errln, out, outln};
use crate::render::text::{notice_line, render, Sink};
use crate::setup::{lead, Lead};
use crate::term::{Input, Interrupts, LineReader, Printer};
use anyhow::{Context, Result};
use std::sync::Arc;
use tokio::sync::mpsc;
use troupe_agent::{Agent, AgentEvent, SessionEndReason, TurnEnd};
use troupe_catalog::commands::Lookup;
use troupe_mcp::McpManager;
use troupe_team::wake::WakeListener;
use troupe_team::{Notice, Team, LEAD};
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
  /model [name]  the lead's model; with a name, switch to it from the next request on
  /memory  the memory files read at start (AGENTS.md, CLAUDE.md, imports, MEMORY.md)
  /mcp     the MCP servers: status, transport, tools, last error
  /permissions  the permission mode and rules in force
  /agents  the agent definitions (subagents, teammates' profiles) and where each comes from
  /hooks   the hooks in force, by event, with the settings file of each
  /resume [n|id]  go on with a past session of this workspace (a numbered list to pick from)
  # note   append a note to the project memory file (AGENTS.md or CLAUDE.md)
  !cmd     run a shell command yourself; its output goes to the model with your next prompt
  @path    in a prompt: attach that file (or a folder's listing)
  /exit    leave (Ctrl-D works too)
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
        team,
        runtime,
        mcp,
        subagents,
        custom,
        ..
    } = lead(
        &cli.run,
        approver.clone(),
        sink,
        crate::trust::Asking::Person,
    )?;
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
    let mode = crate::term::mode::ModeCell::new(agent.policy().mode);
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
    let files = crate::file_flag::blocks(&cli.run.claude.file, &cwd)?;
    let view = crate::term::view::View::new(printer.clone(), colour, troupe_team::LEAD);
    if printer.is_live() {
        agent.watch_tool_output(view.progress_sink());
    }
    let io = Io {
        reader,
        interrupts,
        view,
        printer,
        asks,
        mode,
        context: files,
        cwd,
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
    let result = runtime.block_on(repl_loop(&mut agent, &session, io, first));
    runtime.block_on(agent.end_session(SessionEndReason::Exit));
    runtime.block_on(team.stop_all(crate::headless::STOP_LIMIT));
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
    /// Where `!` commands run and `@` paths are found: the folder troupe was started from.
    cwd: std::path::PathBuf,
}

impl Io {
    /// Shows a permission question and takes the next line as the answer (Ctrl-C: no).
    async fn answer(&mut self, ask: Ask) {
        // The calls' clocks stop while the person reads the question.
        self.view.asking(true);
        self.printer.styled(&ask.text);
        let answer = match self.reader.answer().await {
            Input::Line(line) => line,
            Input::Interrupted | Input::Eof => "n".to_string(),
        };
        self.view.asking(false);
        let _ = ask.reply.send(answer);
    }
}

async fn repl_loop(
    agent: &mut Agent,
    session: &Session<'_>,
    mut io: Io,
    first: Option<String>,
) -> Result<()> {
    let team = session.team;
    let mut wake = WakeListener::bind(&team.shared().store, LEAD)
        .await
        .context("binding the lead's wake socket")?;
    let mut queued: Vec<String> = first.into_iter().collect();
    let jobs = agent.background().cloned();
    let mut overdue = crate::waiting::Overdue::new();
    let mut overdue_ticks = tokio::time::interval(overdue.interval());
    // Mail that came before the wake socket was bound (a scheduled prompt that fired at start,
    // teammates' reports left from the session being continued) wakes the lead now.
    if queued.is_empty() && has_unread(team).await {
        if let Some(line) = drive(agent, None, &mut io).await {
            queued.push(line);
        }
    }
    'outer: loop {
        while let Some(line) = (!queued.is_empty()).then(|| queued.remove(0)) {
            match handle_line(agent, session, &line, &mut io).await {
                Handled::Exit => break 'outer,
                Handled::Continue(Some(next)) => queued.push(next),
                Handled::Continue(None) => {}
            }
        }
        io.reader.request();
        tokio::select! {
            input = io.reader.next() => match input {
                Input::Line(line) => queued.push(line),
                Input::Interrupted => io.printer.line("(Ctrl-C: nothing to interrupt; /exit or Ctrl-D to leave)"),
                Input::Eof => break,
            },
            Some(ask) = io.asks.recv() => io.answer(ask).await,
            _ = overdue_ticks.tick() => {
                for line in overdue.check(team.shared().store.as_ref()).await {
                    io.printer.line(&format!("⏳ {line}"));
                }
            }
            () = pending_notification(jobs.as_ref()) => {
                // A background command finished: the lead hears of it as it would of mail.
                if let Some(line) = drive(agent, None, &mut io).await {
                    queued.push(line);
                }
            }
            _ = wake.wait() => {
                if has_unread(team).await {
                    // The prompt stays active; output goes above it, and Ctrl-C arrives as input.
                    if let Some(line) = drive(agent, None, &mut io).await {
                        queued.push(line);
                    }
                }
            }
        }
    }
    io.reader.finish();
    Ok(())
}

/// Whether the lead has mail it has not read.
async fn has_unread(team: &Team) -> bool {
    team.shared()
        .store
        .peek(LEAD)
        .await
        .is_ok_and(|b| !b.messages.is_empty())
}

/// What handling a line led to.
enum Handled {
    /// Keep going, with a line the person typed meanwhile.
    Continue(Option<String>),
    /// Leave the REPL.
    Exit,
}

/// Handles one line.
async fn handle_line(agent: &mut Agent, session: &Session<'_>, line: &str, io: &mut Io) -> Handled {
    let (team, mcp) = (session.team, session.mcp);
    let line = line.trim();
    match line {
        "" => {}
        "/exit" | "/quit" => return Handled::Exit,
        "/help" => outln!(
            "{HELP}{}{}",
            custom_help(session),
            crate::mcp_prompt::help(session.mcp)
        ),
        "/clear" => crate::commands::sessions::clear(agent, &session.troupe_dir).await,
        "/cost" => print_cost(agent, session).await,
        cmd if cmd == "/model" || cmd.starts_with("/model ") => {
            let name = cmd.trim_start_matches("/model").trim();
            let recipe = &team.shared().config.recipe;
            crate::commands::model::switch(agent, recipe, &session.model_config, name);
        }
        "/context" => out!("{}", agent.context().render()),
        cmd if cmd == "/compact" || cmd.starts_with("/compact ") => {
            let focus = cmd.trim_start_matches("/compact").trim();
            compact(agent, focus, &mut io.interrupts).await;
        }
        "/bashes" => out!("{}", bashes_table(agent)),
        kill if kill.starts_with("/bashes kill") => {
            let id = kill.trim_start_matches("/bashes kill").trim();
            match agent.background() {
                None => outln!("(this agent has no background commands)"),
                Some(_) if id.is_empty() => outln!("(usage: /bashes kill <id>)"),
                Some(jobs) => match jobs.kill(id).await {
                    Ok(job) => outln!("{} {}", job.id, job.status.describe()),
                    Err(e) => errln!("error: {e}"),
                },
            }
        }
        "/mcp" => out!(
            "{}",
            crate::mcp::status_table(&mcp.statuses(), mcp.problems())
        ),
        "/team" => match crate::commands::team_status::repl_view(&*team.shared().store).await {
            // The view `troupe team status` shows (made safe cell by cell, colour kept).
            Ok((view, r)) => {
                crate::render::sanitize::write_stdout(&view);
                out!("\n{}", crate::cost::table(&costs(agent, session, Some(&r))));
                out!("{}", troupe_team::render::background_table(&r));
            }
            Err(e) => errln!("error: {e}"),
        },
        "/inbox" => match team.shared().store.peek(LEAD).await {
            Ok(b) if b.messages.is_empty() => {
                outln!("no unread mail (mail is shown as it arrives)")
            }
            Ok(b) => {
                for env in &b.messages {
                    outln!(
                        "[{} → lead] {}: {}",
                        env.from,
                        env.kind.as_str(),
                        env.content
                    );
                }
            }
            Err(e) => errln!("error: {e}"),
        },
        "/memory" => {
            // The person sees the files as they are now: later agents read them so.
            troupe_agent::memory_snapshot::refresh();
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            let config = &team.shared().config;
            let memory = troupe_agent::memory::load_excluding(
                &config.workspace,
                home.as_deref(),
                config.recipe.memory_sources,
                &config.recipe.policy.concealed(),
                &troupe_agent::memory_excludes::Excludes::of(&config.recipe.settings),
            );
            out!("{}", memory.describe());
        }
        note if note.starts_with('#') => {
            let note = note.trim_start_matches('#').trim();
            if note.is_empty() {
                outln!("(nothing to remember: write the note after the #)");
            } else {
                match troupe_agent::memory::append_note(&team.shared().config.workspace, note) {
                    Ok(path) => outln!(
                        "(noted in {}; new sessions and teammates read it)",
                        path.display()
                    ),
                    Err(e) => errln!("error: could not save the note: {e}"),
                }
            }
        }
        "/agents" => out!(
            "{}",
            crate::repl_lists::agents(
                &team.shared().config.agents,
                &team.shared().config.workspace
            )
        ),
        "/hooks" => {
            let config = &team.shared().config;
            let layers = crate::settings::load(&config.workspace, session.settings_arg.as_deref())
                .map(|l| l.layers)
                .unwrap_or_default();
            out!(
                "{}",
                crate::repl_lists::hooks(&config.recipe.settings, &layers)
            );
        }
        cmd if cmd == "/resume" || cmd.starts_with("/resume ") => {
            let arg = cmd.trim_start_matches("/resume").trim();
            crate::repl_lists::resume(agent, &session.troupe_dir, arg, &mut io.reader, &io.printer)
                .await;
        }
        "/permissions" => out!(
            "{}",
            crate::repl_input::permissions(agent.policy(), &session.approver.session_rules())
        ),
        bang if bang.starts_with('!') => {
            let command = bang.trim_start_matches('!').trim();
            if command.is_empty() {
                outln!("(write the command after the !, as in !git status)");
            } else {
                let run = crate::repl_input::shell(command, &io.cwd).await;
                out!("{}", run.shown);
                io.context.push(run.for_model);
            }
        }
        cmd if cmd.starts_with('/') => {
            let commands = &session.custom.commands;
            if !crate::mcp_prompt::is_one(session.mcp, cmd)
                && matches!(commands.lookup(cmd), Lookup::Unknown)
            {
                outln!("unknown command {cmd}; /help lists them");
                return Handled::Continue(None);
            }
            match crate::slash::begin(agent, cmd.to_string(), commands, session.mcp).await {
                Ok((prompt, turn)) => {
                    let typed = drive(agent, Some(prompt), io).await;
                    turn.end(agent);
                    return Handled::Continue(typed);
                }
                Err(why) => errln!("error: {why}"),
            }
        }
        _ => {
            let mut prompt = crate::repl_input::attach(line, &io.cwd);
            if !io.context.is_empty() {
                prompt = format!("{}\n\n{prompt}", io.context.join("\n"));
                io.context.clear();
            }
            return Handled::Continue(drive(agent, Some(prompt), io).await);
        }
    }
    Handled::Continue(None)
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

/// Waits until a background command's notification is waiting (never, without jobs).
async fn pending_notification(jobs: Option<&Jobs>) {
    match jobs {
        Some(jobs) => jobs.wait_pending().await,
        None => std::future::pending().await,
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
    crate::cost::breakdown(&lead_usage(agent), session.subagents.usage(), roster)
}

/// The lead's model now, its tokens, and its tokens per model called.
pub fn lead_usage(agent: &Agent) -> troupe_protocol::AgentUsage {
    troupe_protocol::AgentUsage {
        model: agent.config().model.clone(),
        usage: agent.usage(),
        by_model: agent.usage_by_model().clone(),
    }
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

/// Runs one turn, its output printed above the prompt (a status line shows progress on a
/// terminal). With `input` the person typed it; without, mail woke the lead and the prompt
/// stays active meanwhile. Ctrl-C interrupts (a key while no prompt shows, at an empty
/// prompt, or the signal). Permission questions are answered either way. Returns a line the
/// person entered meanwhile.
async fn drive(agent: &mut Agent, input: Option<String>, io: &mut Io) -> Option<String> {
    let by_mail = input.is_none();
    let mode = io.mode.get();
    if mode != agent.policy().mode {
        agent.set_permission_mode(mode);
    }
    let view = io.view.clone();
    view.begin();
    let live = io.printer.is_live();
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(100));
    let mut observe = {
        let view = view.clone();
        move |event: AgentEvent<'_>| view.event(&event)
    };
    let mut entered = None;
    io.interrupts.forget();
    let result = {
        let turn = agent.run_turn(input, &mut observe);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                r = &mut turn => break Some(r),
                _ = ticks.tick(), if live => view.tick(),
                _ = tokio::signal::ctrl_c() => break None,
                () = io.interrupts.next() => break None,
                Some(ask) = io.asks.recv() => io.answer(ask).await,
                input = io.reader.next(), if by_mail && entered.is_none() => match input {
                    Input::Interrupted => break None,
                    Input::Line(line) => entered = Some(line),
                    Input::Eof => entered = Some("/exit".to_string()),
                },
            }
        }
    };
    view.end();
    match result {
        Some(Ok(o)) if o.end == TurnEnd::MaxTurns => {
            io.printer.line("(stopped: turn limit reached)")
        }
        Some(Ok(o)) if o.end == TurnEnd::Halted => {
            io.printer.line(&format!("(stopped by a hook: {})", o.text))
        }
        Some(Ok(_)) => {}
        Some(Err(e)) => io.printer.line(&format!("error: {e}")),
        None => {
            io.printer.line("(interrupted)");
            if let Err(e) = agent.repair() {
                io.printer.line(&format!("error: {e}"));
            }
        }
    }
    entered
}
