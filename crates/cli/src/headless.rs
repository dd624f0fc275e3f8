//! `troupe -p`: one prompt, no questions asked, a result printed in the chosen format, and an
//! exit code scripts can rely on (0 success, 1 failure). With a team, the run ends only when
//! the team has settled, or when `--team-timeout` runs out.

use crate::args::{Cli, OutputFormat, RunArgs};
use crate::lead_run::{between_turns, end_run, over_budget, settling, RunFailure};
use crate::lead_wakes::LeadWakes;
use crate::render::sanitize::terminal;
use crate::render::script::{notice_sink, Events};
use crate::render::stream_json::Stream;
use crate::render::text;
use crate::script_front::Script;
use crate::setup::{lead, Lead};
use anyhow::{bail, Context, Result};
use std::io::{IsTerminal, Read, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use troupe_agent::{AgentEvent, Approver, RefuseApprover};
use troupe_driver::{Driver, Event, Flow};
use troupe_team::LEAD;

pub(crate) use crate::run_report::{init_event, run_result};

/// How long a prompt argument waits for piped stdin to finish before going without it.
const STDIN_WAIT: Duration = Duration::from_secs(3);

/// The prompt from the argument, else from stdin; with both, stdin's text is appended to the
/// argument (`git diff | troupe -p "review this"`), as Claude Code does.
fn read_prompt(cli: &Cli) -> Result<String> {
    if let Some(p) = &cli.prompt {
        if !p.trim().is_empty() {
            return Ok(match piped_stdin() {
                Some(text) if !text.trim().is_empty() => format!("{p}\n\n{text}"),
                _ => p.clone(),
            });
        }
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("no prompt: pass it as an argument (troupe -p \"…\") or on stdin (echo \"…\" | troupe -p)");
    }
    let mut text = String::new();
    stdin
        .lock()
        .read_to_string(&mut text)
        .context("reading the prompt from stdin")?;
    if text.trim().is_empty() {
        bail!("no prompt: stdin was empty; pass it as an argument (troupe -p \"…\") or on stdin");
    }
    Ok(text)
}

/// Stdin's text when it is piped and ends within [`STDIN_WAIT`]; a terminal, or a pipe that
/// stays open and silent, is left alone (with a note for the latter).
fn piped_stdin() -> Option<String> {
    if std::io::stdin().is_terminal() {
        return None;
    }
    // A file or /dev/null (a script's `< /dev/null`, the Agent SDK's usual stdin) ends at
    // once: read it here rather than start a thread to wait for it.
    if stdin_ends_at_once() {
        let mut text = String::new();
        return match std::io::stdin().lock().read_to_string(&mut text) {
            Ok(_) => Some(text),
            Err(e) => {
                eprintln!("troupe: note: could not read stdin ({e}); using the prompt alone");
                None
            }
        };
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = std::io::stdin().lock().read_to_string(&mut text);
        let _ = tx.send(read.map(|_| text));
    });
    match rx.recv_timeout(STDIN_WAIT) {
        Ok(Ok(text)) => Some(text),
        Ok(Err(e)) => {
            eprintln!("troupe: note: could not read stdin ({e}); using the prompt alone");
            None
        }
        Err(_) => {
            eprintln!(
                "troupe: note: stdin gave no end of input within {}s; using the prompt alone",
                STDIN_WAIT.as_secs()
            );
            None
        }
    }
}

/// Whether stdin is a regular file or /dev/null, whose reading cannot wait on a writer.
fn stdin_ends_at_once() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return false;
    };
    let Ok(meta) = std::fs::File::from(fd).metadata() else {
        return false;
    };
    let file_type = meta.file_type();
    file_type.is_file()
        || (file_type.is_char_device()
            && std::fs::metadata("/dev/null").is_ok_and(|null| null.rdev() == meta.rdev()))
}

/// The approver of a headless run whose input is the prompt: nobody can answer, so what the
/// rules would ask about is refused (saying how to allow it).
fn text_approver(args: &RunArgs) -> Result<Arc<dyn Approver>> {
    match args.contract.permission_prompt_tool.as_deref() {
        None => Ok(Arc::new(RefuseApprover)),
        Some("stdio") => bail!("--permission-prompt-tool stdio needs --input-format stream-json (the answers come as control responses on stdin)"),
        Some(other) => bail!("--permission-prompt-tool {other}: only `stdio` (the Agent SDK's control protocol) is supported"),
    }
}

/// Runs headless and returns the process exit code.
pub fn run(cli: &Cli) -> Result<i32> {
    let started = Instant::now();
    let cwd = std::env::current_dir().context("finding the current directory")?;
    let files = crate::file_flag::files(&cli.run.claude.file, &cwd)?;
    let prompt = read_prompt(cli)?;
    // The `@path`s attached are those of the prompt as given, not of what was piped with it
    // or --file attached.
    let typed = match cli.prompt.as_deref() {
        Some(given) if !given.trim().is_empty() => given.to_string(),
        _ => prompt.clone(),
    };
    let prompt = crate::file_flag::attached(prompt, &files.blocks);
    let schema = cli
        .run
        .contract
        .json_schema
        .as_deref()
        .map(crate::structured_output::parse_schema)
        .transpose()?;
    let with_schema;
    let args = match &schema {
        Some(schema) => {
            let mut args = cli.run.clone();
            let instruction = crate::structured_output::instruction(schema);
            args.append_system_prompt = Some(match args.append_system_prompt.take() {
                Some(text) => format!("{text}\n\n{instruction}"),
                None => instruction,
            });
            with_schema = args;
            &with_schema
        }
        None => &cli.run,
    };
    let format = args.output_format;
    let session_cell = Arc::new(OnceLock::new());
    let mut lead = lead(
        args,
        text_approver(args)?,
        notice_sink(format, args.verbose, session_cell.clone()),
        crate::trust::Asking::Script,
    )?;
    crate::mcp::warn_unusable(&lead.crew.mcp);
    crate::mcp::wait_for_first_call(&lead.crew.mcp, lead.agent.settings(), &lead.runtime);
    let _ = session_cell.set(lead.run.session_id.clone());
    let events = Events::new(format, args.verbose);
    if events.wanted() {
        events.push(init_event(&lead.agent, &lead.run, &lead.crew));
    }
    let verbose = args.verbose;
    let stream = Arc::new(Mutex::new(Stream::new(
        &lead.run.session_id,
        LEAD,
        args.contract.include_partial_messages,
        &lead.run.workspace,
    )));
    let mut watch =
        crate::budget::BudgetWatch::new(args.contract.max_budget_usd, 0.0, lead.agent.stop_flag());
    let mut observe = {
        let (events, stream) = (events.clone(), stream.clone());
        move |event: AgentEvent<'_>| {
            watch.observe(&event);
            if events.wanted() {
                let lines = stream
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .event(&event);
                for line in lines {
                    events.push(line);
                }
            } else {
                stream
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .note(&event);
                if format == OutputFormat::Text && verbose {
                    text::render(text::Sink::Stderr, "", &event, false);
                }
            }
        }
    };
    let budget = args.contract.max_budget_usd;
    let custom = lead.crew.custom.clone();
    let (prompt, command) = lead
        .runtime
        .block_on(crate::slash::begin(
            &mut lead.agent,
            troupe_driver::Prompt::new(prompt, files.images),
            &custom.commands,
            &lead.crew.mcp,
            Some((
                &crate::repl_input::start_folder(&lead.run.workspace),
                &typed,
            )),
        ))
        .map_err(anyhow::Error::msg)?;
    // Ctrl-C's first press interrupts the turn and the run still reports; a second ends
    // troupe at once.
    let interrupt = Arc::new(tokio::sync::Notify::new());
    crate::signals::on_first_interrupt({
        let interrupt = interrupt.clone();
        move || interrupt.notify_one()
    });
    let policy = settling(args);
    let (outcome, structured) = {
        let Lead {
            agent,
            run,
            crew,
            runtime,
            ..
        } = &mut lead;
        let mut front = Script::new(run, &crew.team, interrupt, command);
        front.fallback = args.contract.fallback_model.clone();
        front.schema = schema.as_ref();
        let mut sink = |event: Event<'_>| match event {
            Event::Agent(event) => observe(event),
            other => between_turns(&other),
        };
        runtime.block_on(async {
            match LeadWakes::bind(&crew.team).await {
                Ok(wakes) => {
                    let mut driver = Driver::new(agent, Box::new(wakes), policy);
                    driver
                        .run(Flow::Prompt(prompt), &mut front, &mut sink)
                        .await;
                }
                Err(why) => front.outcome = Some((Err(RunFailure::Team(why)), None)),
            }
        });
        front.outcome.take().unwrap_or_else(|| {
            (
                Err(RunFailure::Team("the run ended without a result".into())),
                None,
            )
        })
    };
    let interrupted = matches!(outcome, Err(RunFailure::Interrupted));
    let outcome = over_budget(&lead.agent, &lead.crew, budget, outcome);
    end_run(&mut lead);
    let (stop_reason, ttft) = {
        let mut stream = stream.lock().unwrap_or_else(PoisonError::into_inner);
        (stream.last_stop_reason.clone(), stream.take_ttft(started))
    };
    let mut report = lead.runtime.block_on(run_result(
        &lead.agent,
        &lead.run,
        &lead.crew,
        outcome,
        started,
        stop_reason,
        ttft,
    ));
    report.structured_output = structured;
    match format {
        OutputFormat::Text => {
            if report.subtype.is_error() {
                eprintln!("troupe: {}", terminal(&report.result));
            } else {
                // Nobody reading (a closed pipe) changes nothing: the exit code still tells.
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", terminal(&report.result)).and_then(|_| out.flush());
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => events.finish(report.to_json()),
    }
    let unused = lead.runtime.block_on(crate::team_leftover::unused_folder(
        &lead.crew.team,
        args.team.is_some(),
    ));
    lead.close();
    crate::team_leftover::remove(unused);
    Ok(match (interrupted, report.subtype.is_error()) {
        (true, _) => 130,
        (false, true) => 1,
        (false, false) => 0,
    })
}
