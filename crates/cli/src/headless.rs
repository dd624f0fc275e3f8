//! `troupe -p`: one prompt, no questions asked, a result printed in the chosen format, and an
//! exit code scripts can rely on (0 success, 1 failure). With a team, the run ends only when
//! the team has settled, or when `--team-timeout` runs out.

use crate::args::{Cli, OutputFormat, RunArgs};
use crate::args_contract::InputFormat;
use crate::cost::cost_usd;
use crate::render::sanitize::terminal;
use crate::render::stream_json::Stream;
use crate::render::{stream_json, text};
use crate::setup::{lead, Lead};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{IsTerminal, Read, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use troupe_agent::{
    Agent, AgentError, AgentEvent, Approver, RefuseApprover, SessionEndReason, TurnEnd,
};
use troupe_team::wake::WakeListener;
use troupe_team::{Notice, NoticeSink, SettleState, Team, LEAD};
use troupe_tools::background::Jobs;

/// How long exit waits for in-process teammates to finish their round before aborting them.
pub(crate) use crate::run_report::{init_event, run_result};

pub const STOP_LIMIT: Duration = Duration::from_secs(30);

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

/// How the lead's work went, across the first turn and the turns mail woke it for.
pub(crate) struct Progress {
    pub(crate) text: String,
    pub(crate) model_calls: u32,
    pub(crate) end: TurnEnd,
}

/// Why a headless run failed.
pub(crate) enum RunFailure {
    Agent(AgentError),
    Team(String),
    /// `--max-budget-usd` ran out after this many model calls.
    Budget {
        reason: String,
        model_calls: u32,
    },
    /// The controlling process interrupted the turn (stream-json input).
    Interrupted,
}

/// Where team notices go; the session id is filled in once setup has resolved it.
pub(crate) fn notice_sink(
    format: OutputFormat,
    verbose: bool,
    session: Arc<OnceLock<String>>,
) -> NoticeSink {
    match format {
        OutputFormat::StreamJson => Some(Arc::new(move |notice: Notice| {
            let session_id = session.get().map(String::as_str).unwrap_or("");
            let value = match notice {
                Notice::Status {
                    name,
                    status,
                    detail,
                } => {
                    json!({"type": "system", "subtype": "teammate_status", "agent": name, "status": status, "detail": detail, "session_id": session_id, "uuid": stream_json::uuid()})
                }
                Notice::Tool {
                    agent,
                    tool,
                    summary,
                } => {
                    json!({"type": "system", "subtype": "teammate_tool", "agent": agent, "tool": tool, "summary": summary, "session_id": session_id, "uuid": stream_json::uuid()})
                }
                Notice::Mail {
                    from,
                    to,
                    kind,
                    content,
                } => {
                    json!({"type": "system", "subtype": "mail", "from": from, "to": to, "kind": kind, "content": content, "session_id": session_id, "uuid": stream_json::uuid()})
                }
            };
            stream_json::emit(&value);
        })),
        OutputFormat::Text if verbose => Some(Arc::new(|notice: Notice| {
            eprintln!("{}", terminal(&text::notice_line(&notice)))
        })),
        OutputFormat::Text | OutputFormat::Json => None,
    }
}

/// Runs one prompt (none: answers the conversation as it stands, after a failed call) and the
/// turns the team's mail asks for, until the team settles.
pub(crate) async fn work(
    agent: &mut Agent,
    team: &Team,
    prompt: Option<String>,
    timeout: Duration,
    observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<Progress, RunFailure> {
    let mut wake = WakeListener::bind(&team.shared().store, LEAD)
        .await
        .map_err(|e| RunFailure::Team(format!("lead wake socket: {e}")))?;
    let jobs = agent.background().cloned();
    let mut job_changes = jobs.as_ref().map(Jobs::subscribe);
    let first = agent
        .run_turn(prompt, observe)
        .await
        .map_err(RunFailure::Agent)?;
    let mut progress = Progress {
        text: first.text,
        model_calls: first.model_calls,
        end: first.end,
    };
    let deadline = Instant::now() + timeout;
    let mut overdue = crate::waiting::Overdue::new();
    let stop = agent.stop_flag();
    while progress.end != TurnEnd::MaxTurns && !crate::budget::stopped(&stop) {
        // A finished background command wakes the lead the way mail does.
        let notified = jobs.as_ref().is_some_and(Jobs::has_pending);
        let state = match notified {
            true => SettleState::LeadHasMail,
            false => team
                .settle_state()
                .await
                .map_err(|e| RunFailure::Team(e.to_string()))?,
        };
        // The lead's own background commands keep the run going like a working teammate.
        let mut busy = match state {
            SettleState::LeadHasMail => {
                let turn = agent
                    .run_turn(None, observe)
                    .await
                    .map_err(RunFailure::Agent)?;
                progress.model_calls += turn.model_calls;
                if turn.end != TurnEnd::Nothing {
                    progress.text = turn.text;
                    progress.end = turn.end;
                }
                continue;
            }
            SettleState::Settled => Vec::new(),
            SettleState::Busy(names) => names,
        };
        if let Some(jobs) = &jobs {
            busy.extend(
                jobs.running()
                    .into_iter()
                    .map(|j| format!("the lead's background command {} ({})", j.id, j.command)),
            );
        }
        if busy.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(RunFailure::Team(format!(
                "the team did not settle within --team-timeout {}s; still working: {}",
                timeout.as_secs(),
                busy.join(", ")
            )));
        }
        let job_change = async {
            let changed = match job_changes.as_mut() {
                Some(changes) => changes.changed().await.is_ok(),
                None => false,
            };
            if !changed {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = team.wait_for_change(&mut wake, (deadline - now).min(overdue.interval())) => {}
            () = job_change => {}
        }
        for line in overdue.check(team.shared().store.as_ref()).await {
            crate::render::sanitize::errln!("troupe: {line}");
        }
    }
    Ok(progress)
}

/// Where a run's events go: stream-json prints them as they happen, `json --verbose`
/// collects them for the array it prints at the end, the rest drop them.
#[derive(Clone)]
pub(crate) struct Events {
    format: OutputFormat,
    collected: Option<Arc<Mutex<Vec<Value>>>>,
}

impl Events {
    pub(crate) fn new(format: OutputFormat, verbose: bool) -> Events {
        let collected =
            (format == OutputFormat::Json && verbose).then(|| Arc::new(Mutex::new(Vec::new())));
        Events { format, collected }
    }

    /// Whether events are wanted at all.
    pub(crate) fn wanted(&self) -> bool {
        self.format == OutputFormat::StreamJson || self.collected.is_some()
    }

    pub(crate) fn push(&self, value: Value) {
        match &self.collected {
            Some(all) => all
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(value),
            None if self.format == OutputFormat::StreamJson => stream_json::emit(&value),
            None => {}
        }
    }

    /// Prints the result: one object, or with `json --verbose` the whole array ending in it.
    pub(crate) fn finish(&self, result: Value) {
        match &self.collected {
            Some(all) => {
                let mut all =
                    std::mem::take(&mut *all.lock().unwrap_or_else(PoisonError::into_inner));
                all.push(result);
                stream_json::emit(&Value::Array(all));
            }
            None => stream_json::emit(&result),
        }
    }
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
    if cli.run.contract.input_format == InputFormat::StreamJson {
        return crate::control::run(cli);
    }
    let started = Instant::now();
    let cwd = std::env::current_dir().context("finding the current directory")?;
    let files = crate::file_flag::blocks(&cli.run.claude.file, &cwd)?;
    let prompt = crate::file_flag::attached(read_prompt(cli)?, &files);
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
    crate::mcp::warn_unusable(&lead.mcp);
    crate::mcp::wait_for_first_call(&lead.mcp, lead.agent.settings(), &lead.runtime);
    let _ = session_cell.set(lead.run.session_id.clone());
    let events = Events::new(format, args.verbose);
    if events.wanted() {
        events.push(init_event(&lead));
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
    let timeout = Duration::from_secs(args.team_timeout);
    let budget = args.contract.max_budget_usd;
    let custom = lead.custom.clone();
    let (prompt, command) = lead
        .runtime
        .block_on(crate::slash::begin(
            &mut lead.agent,
            prompt,
            &custom.commands,
            &lead.mcp,
        ))
        .map_err(anyhow::Error::msg)?;
    let mut outcome = lead.runtime.block_on(work(
        &mut lead.agent,
        &lead.team,
        Some(prompt),
        timeout,
        &mut observe,
    ));
    if let (Some(fallback), Err(RunFailure::Agent(error))) =
        (&args.contract.fallback_model, &outcome)
    {
        if crate::fallback::worth_falling_back(error) {
            let failed = lead.agent.config().model.clone();
            lead.run.model.model = lead
                .run
                .model
                .named(fallback, &troupe_tools::child_env::var);
            crate::render::sanitize::errln!(
                "troupe: {failed} failed ({error}); trying the turn again with --fallback-model {}",
                lead.run.model.model
            );
            let client = lead.agent.model_client();
            crate::control::switch_model(&mut lead, client);
            outcome = lead.runtime.block_on(work(
                &mut lead.agent,
                &lead.team,
                None,
                timeout,
                &mut observe,
            ));
        }
    }
    command.end(&mut lead.agent);
    let (outcome, structured) = match &schema {
        Some(schema) => {
            let Lead {
                agent,
                team,
                runtime,
                ..
            } = &mut lead;
            runtime.block_on(structured(
                schema,
                outcome,
                agent,
                team,
                timeout,
                &mut observe,
            ))
        }
        None => (outcome, None),
    };
    let outcome = over_budget(&lead, budget, outcome);
    end_run(&mut lead);
    let (stop_reason, ttft) = {
        let mut stream = stream.lock().unwrap_or_else(PoisonError::into_inner);
        (stream.last_stop_reason.clone(), stream.take_ttft(started))
    };
    let mut report = run_result(&lead, outcome, started, stop_reason, ttft);
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
    lead.close();
    Ok(if report.subtype.is_error() { 1 } else { 0 })
}

/// `--json-schema`: the final answer checked against the schema; one more turn telling the
/// lead what is wrong when it does not fit, then an error naming the fault.
async fn structured(
    schema: &Value,
    mut outcome: Result<Progress, RunFailure>,
    agent: &mut Agent,
    team: &Team,
    timeout: Duration,
    observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> (Result<Progress, RunFailure>, Option<Value>) {
    use crate::structured_output::{check, retry_prompt};
    let mut retried = false;
    loop {
        let progress = match outcome {
            Ok(progress) if progress.end != TurnEnd::MaxTurns => progress,
            other => return (other, None),
        };
        match check(schema, &progress.text) {
            Ok(value) => return (Ok(progress), Some(value)),
            Err(why) if !retried => {
                retried = true;
                let earlier = progress.model_calls;
                outcome = work(agent, team, Some(retry_prompt(&why)), timeout, observe)
                    .await
                    .map(|mut again| {
                        again.model_calls += earlier;
                        again
                    });
            }
            Err(why) => {
                return (
                    Err(RunFailure::Team(format!(
                        "--json-schema: the final answer does not satisfy the schema: {why}"
                    ))),
                    None,
                )
            }
        }
    }
}

/// Ends a headless run: the session hooks, the teammates at their round boundary, the MCP
/// servers, and whatever any tool started (even what left its call behind).
pub(crate) fn end_run(lead: &mut Lead) {
    lead.runtime
        .block_on(lead.agent.end_session(SessionEndReason::Exit));
    lead.runtime.block_on(lead.team.stop_all(STOP_LIMIT));
    lead.mcp.shutdown();
    troupe_tools::process::end_all();
}

/// What the lead and its subagents have spent so far, in US dollars.
pub(crate) fn spent_usd(lead: &Lead) -> f64 {
    let model = &lead.agent.config().model;
    crate::cost::priced_usd(model, &lead.agent.usage(), lead.agent.usage_by_model())
        + cost_usd(model, &lead.subagents.usage())
}

/// `--max-budget-usd`: a run whose cost passed the budget is reported as an error (Claude
/// Code's `error_max_budget_usd`), with what it spent.
pub(crate) fn over_budget(
    lead: &Lead,
    budget: Option<f64>,
    outcome: Result<Progress, RunFailure>,
) -> Result<Progress, RunFailure> {
    let Some(budget) = budget else {
        return outcome;
    };
    let spent = spent_usd(lead);
    match outcome {
        Ok(progress) if spent > budget => Err(RunFailure::Budget {
            reason: format!("the run cost ${spent:.4}, over --max-budget-usd {budget}"),
            model_calls: progress.model_calls,
        }),
        other => other,
    }
}
