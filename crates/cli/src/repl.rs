//! The interactive REPL: line editing and history, streamed output, Ctrl-C interrupts the
//! current turn but keeps the session, slash commands, and team mail that wakes the lead.

use crate::args::Cli;
use crate::cost::cost_usd;
use crate::render::text::{notice_line, render, Sink};
use crate::repl_input::{Input, LineReader, Printer};
use crate::setup::{lead, Lead};
use anyhow::{Context, Result};
use async_trait::async_trait;
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use troupe_agent::{Agent, AgentEvent, Approval, Approver, Question, TurnEnd};
use troupe_store::MailboxStore;
use troupe_team::render::roster_table;
use troupe_team::wake::WakeListener;
use troupe_team::{Notice, Team, LEAD};

const HELP: &str = "\
Commands:
  /help    this help
  /team    the team roster: name, role, status, what each is doing, tokens
  /inbox   the lead's unread mail
  /clear   start a fresh conversation (the transcript keeps the history)
  /cost    tokens used and approximate cost this session
  /exit    leave (Ctrl-D works too)
Ctrl-C interrupts the agent's current turn; the session stays.
Mail from teammates is shown as it arrives and wakes the lead when it is not busy.";

/// Asks the person at the terminal before a tool call that needs permission.
#[derive(Default)]
pub struct ReplApprover {
    always: Mutex<HashSet<String>>,
}

#[async_trait]
impl Approver for ReplApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        let Question {
            agent,
            tool,
            input,
            reason,
            ..
        } = question;
        if self
            .always
            .lock()
            .map(|set| set.contains(tool))
            .unwrap_or(false)
        {
            return Approval::Allow;
        }
        let summary = troupe_tools::summarize_input(tool, input);
        let question = format!("\n{agent} wants to run {tool}: {summary}\n  ({reason})\n  Allow? [y]es / [n]o / [a]lways allow {tool} this session: ");
        let answer = tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Approval::Allow,
                "a" | "always" => {
                    if let Ok(mut set) = self.always.lock() {
                        set.insert(tool.to_string());
                    }
                    Approval::Allow
                }
                _ => Approval::Deny(format!("the user refused this {tool} call")),
            },
            _ => Approval::Deny(format!("no answer to the permission question for {tool}")),
        }
    }
}

/// Runs the REPL and returns the exit code.
pub fn run(cli: &Cli) -> Result<i32> {
    let printer = Printer::new();
    let notice_printer = printer.clone();
    let sink: troupe_team::NoticeSink = Some(Arc::new(move |n: Notice| {
        notice_printer.line(&notice_line(&n))
    }));
    let Lead {
        mut agent,
        run,
        team,
        runtime,
    } = lead(&cli.run, Arc::new(ReplApprover::default()), sink)?;
    let reader = LineReader::start(run.troupe_dir.join("history"), printer.clone())
        .context("starting the line editor")?;
    println!(
        "troupe {} — {} ({}) in {}\nsession {} · team {} · /help for commands",
        env!("CARGO_PKG_VERSION"),
        run.model.model,
        run.model.provider,
        run.workspace.display(),
        run.session_id,
        team.name()
    );
    if !agent.messages().is_empty() {
        println!("(resumed {} messages)", agent.messages().len());
    }
    let model = run.model.model.clone();
    let first = cli.prompt.clone();
    let result = runtime.block_on(repl_loop(&mut agent, &team, reader, printer, first, &model));
    team.stop_all();
    result.map(|_| 0)
}

async fn repl_loop(
    agent: &mut Agent,
    team: &Team,
    mut reader: LineReader,
    printer: Printer,
    first: Option<String>,
    model: &str,
) -> Result<()> {
    let mut wake =
        WakeListener::bind(&team.shared().store, LEAD).context("binding the lead's wake socket")?;
    let mut queued: Vec<String> = first.into_iter().collect();
    'outer: loop {
        while let Some(line) = (!queued.is_empty()).then(|| queued.remove(0)) {
            if !handle_line(agent, team, &line, model, &printer, &mut reader).await {
                break 'outer;
            }
        }
        reader.request();
        tokio::select! {
            input = reader.next() => match input {
                Input::Line(line) => queued.push(line),
                Input::Interrupted => printer.line("(Ctrl-C: nothing to interrupt; /exit or Ctrl-D to leave)"),
                Input::Eof => break,
            },
            _ = wake.wait() => {
                let unread = team.shared().store.peek(LEAD).map(|b| b.messages.len()).unwrap_or(0);
                if unread > 0 {
                    // The prompt stays active; output goes above it, and Ctrl-C arrives as input.
                    if let Some(line) = mail_turn(agent, &printer, &mut reader).await {
                        queued.push(line);
                    }
                }
            }
        }
    }
    reader.finish();
    Ok(())
}

/// Handles one line; returns false to leave.
async fn handle_line(
    agent: &mut Agent,
    team: &Team,
    line: &str,
    model: &str,
    printer: &Printer,
    reader: &mut LineReader,
) -> bool {
    let line = line.trim();
    match line {
        "" => {}
        "/exit" | "/quit" => return false,
        "/help" => println!("{HELP}"),
        "/clear" => {
            agent.clear();
            println!("(conversation cleared)");
        }
        "/cost" => print_cost(agent, model),
        "/team" => match team.roster() {
            Ok(r) if r.members.is_empty() => println!("team {} has no teammates yet", team.name()),
            Ok(r) => print!("{}", roster_table(&r)),
            Err(e) => eprintln!("error: {e}"),
        },
        "/inbox" => match team.shared().store.peek(LEAD) {
            Ok(b) if b.messages.is_empty() => {
                println!("no unread mail (mail is shown as it arrives)")
            }
            Ok(b) => {
                for env in &b.messages {
                    println!(
                        "[{} → lead] {}: {}",
                        env.from,
                        env.kind.as_str(),
                        env.content
                    );
                }
            }
            Err(e) => eprintln!("error: {e}"),
        },
        cmd if cmd.starts_with('/') => println!("unknown command {cmd}; /help lists them"),
        _ => user_turn(agent, line.to_string(), printer, reader).await,
    }
    true
}

fn print_cost(agent: &Agent, model: &str) {
    let u = agent.usage();
    println!(
        "tokens: {} in, {} out, {} cache read, {} cache write · api time {:.1}s · ≈ ${:.4}",
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        agent.api_ms() as f64 / 1000.0,
        cost_usd(model, &u)
    );
}

fn report(
    result: Option<Result<troupe_agent::TurnOutcome, troupe_agent::AgentError>>,
    agent: &mut Agent,
    printer: &Printer,
) {
    match result {
        Some(Ok(o)) if o.end == TurnEnd::MaxTurns => printer.line("(stopped: turn limit reached)"),
        Some(Ok(_)) => {}
        Some(Err(e)) => printer.line(&format!("error: {e}")),
        None => {
            printer.line("(interrupted)");
            if let Err(e) = agent.repair() {
                printer.line(&format!("error: {e}"));
            }
        }
    }
}

/// A turn the person started: output streams; Ctrl-C (SIGINT) interrupts it.
async fn user_turn(agent: &mut Agent, line: String, printer: &Printer, _reader: &mut LineReader) {
    let mut observe = |event: AgentEvent<'_>| render(Sink::Stdout, "", &event, true);
    let result = tokio::select! {
        r = agent.run_turn(Some(line), &mut observe) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    report(result, agent, printer);
}

/// A turn woken by mail while the prompt is active: whole messages printed above the prompt;
/// Ctrl-C at the prompt interrupts it. Returns a line the person entered meanwhile.
async fn mail_turn(
    agent: &mut Agent,
    printer: &Printer,
    reader: &mut LineReader,
) -> Option<String> {
    let p = printer.clone();
    let mut observe = move |event: AgentEvent<'_>| match &event {
        AgentEvent::MailInjected { text, .. } => p.line(&format!("✉ {text}")),
        AgentEvent::Assistant(m) if !m.text().is_empty() => p.line(&m.text()),
        AgentEvent::ToolStarted { name, input, .. } => p.line(&format!(
            "⏺ {name}({})",
            troupe_tools::summarize_input(name, input)
        )),
        _ => {}
    };
    let mut entered = None;
    let result = {
        let turn = agent.run_turn(None, &mut observe);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                r = &mut turn => break Some(r),
                _ = tokio::signal::ctrl_c() => break None,
                input = reader.next() => match input {
                    Input::Interrupted => break None,
                    Input::Line(line) => entered = Some(line),
                    Input::Eof => entered = Some("/exit".to_string()),
                },
            }
        }
    };
    report(result, agent, printer);
    entered
}
