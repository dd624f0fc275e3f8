//! The REPL as a front end of the session driver: lines become operations, permission
//! questions are answered while a turn runs, and the driver's events are drawn above the
//! prompt.

use super::more;
use super::{bashes_table, compact, costs, custom_help, print_cost, Io, Session, HELP};
use crate::ask::Ask;
use crate::lead_wakes::LeadWakes;
use crate::render::sanitize::{errln, out, outln};
use crate::term::Input;
use anyhow::{Context, Result};
use troupe_agent::{Agent, TurnEnd};
use troupe_catalog::commands::Lookup;
use troupe_driver::{Cause, Driver, Event, Failure, Flow, Frontend, Op, Policy, Progress};
use troupe_team::LEAD;

/// Drives the lead's session from the terminal until the person leaves.
pub(super) async fn drive(
    agent: &mut Agent,
    session: &Session<'_>,
    io: Io,
    first: Option<String>,
) -> Result<()> {
    let wakes = LeadWakes::bind(session.team)
        .await
        .map_err(anyhow::Error::msg)
        .context("binding the lead's wake socket")?;
    let (view, printer) = (io.view.clone(), io.printer.clone());
    let mut sink = move |event: Event<'_>| match event {
        Event::TurnStarted(_) => {}
        Event::Agent(event) => view.event(&event),
        Event::Note(line) => printer.line(&format!("⏳ {line}")),
        Event::Error(line) => printer.line(&format!("error: {line}")),
        Event::TurnEnded(result) => {
            view.end();
            match result {
                Ok(o) if o.end == TurnEnd::MaxTurns => {
                    printer.line("(stopped: turn limit reached)")
                }
                Ok(o) if o.end == TurnEnd::Halted => {
                    printer.line(&format!("(stopped by a hook: {})", o.text))
                }
                Ok(_) => {}
                Err(Failure::Interrupted) => printer.line("(interrupted)"),
                Err(e) => printer.line(&format!("error: {e}")),
            }
        }
    };
    let mut io = io;
    io.ticks = Some(tokio::time::interval(std::time::Duration::from_millis(100)));
    let mut front = Repl { session, io };
    front.status_line(agent, true).await;
    // A line given on the command line is handled as if typed.
    let flow = match first {
        Some(line) => front.apply(agent, Op::Command(line)).await,
        None => Flow::Continue,
    };
    let policy = Policy {
        settle: None,
        who: "the lead".to_string(),
        agent: troupe_team::LEAD.to_string(),
    };
    Driver::new(agent, Box::new(wakes), policy)
        .run(flow, &mut front, &mut sink)
        .await;
    front.io.reader.finish();
    Ok(())
}

/// The next tick of the progress line's clock (never without one).
async fn tick(ticks: Option<&mut tokio::time::Interval>) {
    match ticks {
        Some(ticks) => {
            ticks.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The REPL's side of the session.
struct Repl<'s, 'a> {
    session: &'s Session<'a>,
    io: Io,
}

impl Repl<'_, '_> {
    /// Answers the permission question in hand: shown once, its answer awaited (the wait may
    /// be dropped and taken up again). Ctrl-C or end of input: no.
    async fn answer(&mut self) {
        let Some(ask) = &self.io.answering else {
            return;
        };
        if !self.io.answer_asked {
            // The calls' clocks stop while the person reads the question.
            self.io.view.asking(true);
            self.io.printer.styled(&ask.text);
            self.io.answer_asked = self.io.reader.ask_answer();
        }
        let answer = match self.io.answer_asked {
            true => match self.io.reader.answered().await {
                Input::Line(line) => line,
                Input::Interrupted | Input::Eof => "n".to_string(),
            },
            false => "n".to_string(),
        };
        self.io.view.asking(false);
        self.io.answer_asked = false;
        if let Some(ask) = self.io.answering.take() {
            let _: Result<(), String> = ask.reply.send(answer);
        }
    }

    fn take_ask(&mut self, ask: Ask) {
        self.io.answering = Some(ask);
    }

    /// Runs the status line again with the session as it is now.
    async fn status_line(&mut self, agent: &Agent, now: bool) {
        if let Some(line) = self.io.status_line.as_mut() {
            line.update(agent, self.session).await;
            line.refresh(now);
        }
    }
}

#[async_trait::async_trait]
impl Frontend for Repl<'_, '_> {
    async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op> {
        loop {
            if self.io.answering.is_some() {
                self.answer().await;
                continue;
            }
            let live = self.io.printer.is_live() && self.io.ticks.is_some();
            let Some(_) = turn else {
                self.io.reader.request();
                tokio::select! {
                    input = self.io.reader.next() => match input {
                        Input::Line(line) => return Some(Op::Command(line)),
                        Input::Interrupted => self.io.printer.line("(Ctrl-C: nothing to interrupt; /exit or Ctrl-D to leave)"),
                        Input::Eof => return None,
                    },
                    Some(ask) = self.io.asks.recv() => self.take_ask(ask),
                }
                continue;
            };
            let reading = self.io.reading && !self.io.entered;
            tokio::select! {
                _ = tick(self.io.ticks.as_mut()), if live => {
                    self.io.view.tick();
                    if let Some(line) = self.io.status_line.as_mut() {
                        line.refresh(false);
                    }
                }
                _ = tokio::signal::ctrl_c() => return Some(Op::Interrupt),
                () = self.io.interrupts.next() => return Some(Op::Interrupt),
                Some(ask) = self.io.asks.recv() => self.take_ask(ask),
                // Mail woke the lead: the prompt stays active, and a line entered meanwhile
                // waits for the turn's end.
                input = self.io.reader.next(), if reading => match input {
                    Input::Interrupted => return Some(Op::Interrupt),
                    Input::Line(line) => {
                        self.io.entered = true;
                        return Some(Op::Command(line));
                    }
                    Input::Eof => {
                        self.io.entered = true;
                        return Some(Op::Command("/exit".to_string()));
                    }
                },
            }
        }
    }

    async fn apply(&mut self, agent: &mut Agent, op: Op) -> Flow {
        match op {
            Op::Command(line) => {
                let flow = handle_line(agent, self.session, &line, &mut self.io).await;
                if let Flow::Prompt(sent) = &flow {
                    self.io.typed = Some((sent.text.clone(), line.trim().to_string()));
                }
                self.status_line(agent, true).await;
                flow
            }
            _ => Flow::Continue,
        }
    }

    async fn before_turn(&mut self, agent: &mut Agent, cause: Cause) {
        let mode = self.io.mode.get();
        if mode != agent.policy().mode {
            agent.set_permission_mode(mode);
        }
        self.io.turn_mode = Some(mode);
        self.io.view.begin();
        self.io.interrupts.forget();
        self.io.reading = !cause.has_input();
        self.io.entered = false;
        self.status_line(agent, true).await;
    }

    async fn finished(&mut self, agent: &mut Agent, _result: Result<Progress, Failure>) -> Flow {
        let now = agent.policy().mode;
        if self.io.turn_mode.take().is_some_and(|began| began != now) {
            self.io.mode.set(now);
            self.io
                .printer
                .line(&crate::term::mode::announce_switch(now));
        }
        if let Some(command) = self.io.command.take() {
            command.end(agent);
        }
        if let (Some((sent, typed)), Some(path)) = (self.io.typed.take(), agent.transcript_path()) {
            let store = crate::checkpoint::store::Store::of_transcript(path);
            if let Err(e) = store.name_latest(&sent, &typed) {
                tracing::debug!(error = %e, "could not name the prompt among the checkpoints");
            }
        }
        self.status_line(agent, true).await;
        Flow::Continue
    }
}

/// Handles one line the person entered.
pub(crate) async fn handle_line(
    agent: &mut Agent,
    session: &Session<'_>,
    line: &str,
    io: &mut Io,
) -> Flow {
    let (team, mcp) = (session.team, session.mcp);
    let line = line.trim();
    match line {
        "" => {}
        "/exit" | "/quit" => return Flow::End,
        "/help" => outln!(
            "{HELP}{}{}",
            custom_help(session),
            crate::mcp_prompt::help(session.mcp)
        ),
        "/clear" => crate::commands::sessions::clear(agent, &session.troupe_dir).await,
        "/cost" => print_cost(agent, session).await,
        "/rewind" => super::rewind::rewind(agent, session, io).await,
        "/vim" => match crate::term::vim::toggle() {
            true => {
                outln!("(vim keys on: Esc for normal mode, i to insert; /vim again turns them off)")
            }
            false => outln!("(vim keys off)"),
        },
        cmd if cmd == "/export" || cmd.starts_with("/export ") => {
            let workspace = &team.shared().config.workspace;
            let arg = cmd.trim_start_matches("/export").trim();
            super::export::export(agent.messages(), arg, &io.cwd, workspace);
        }
        "/init" => return Flow::Prompt(more::INIT_PROMPT.into()),
        cmd if more::bundled(session, cmd).is_some() => {
            return Flow::Prompt(more::bundled(session, cmd).unwrap_or_default().into());
        }
        "/status" => out!("{}", more::status(agent, session, io.mode.get().as_str())),
        "/doctor" => more::report(session, more::Report::Doctor).await,
        "/config" => more::report(session, more::Report::Config).await,
        msg if msg.starts_with("/msg ") || msg == "/msg" => more::msg(session, &msg[4..]).await,
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
        "/permissions" => {
            // The mode Shift-Tab chose is the one in force from the next turn on.
            let mode = io.mode.get();
            if mode != agent.policy().mode {
                agent.set_permission_mode(mode);
            }
            out!(
                "{}",
                crate::repl_input::permissions(agent.policy(), &session.approver.session_rules())
            )
        }
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
                return Flow::Continue;
            }
            match crate::slash::begin(agent, cmd.into(), commands, session.mcp, None).await {
                Ok((prompt, turn)) => {
                    io.command = Some(turn);
                    return Flow::Prompt(prompt);
                }
                Err(why) => errln!("error: {why}"),
            }
        }
        _ => {
            let mut prompt = crate::repl_input::attach(line, &io.cwd);
            let mut pasted =
                crate::prompt_images::pasted(&io.reader.pasted_images().named_in(line));
            crate::repl_input::report_images(&pasted);
            let mut images = io.context_images.clone();
            images.append(&mut pasted.images);
            images.append(&mut prompt.images);
            prompt.images = images;
            if crate::repl_input::refuse_oversized(agent, &prompt) {
                return Flow::Continue;
            }
            io.context_images.clear();
            if !io.context.is_empty() {
                prompt.text = format!("{}\n\n{}", io.context.join("\n"), prompt.text);
                io.context.clear();
            }
            return Flow::Prompt(prompt);
        }
    }
    Flow::Continue
}
