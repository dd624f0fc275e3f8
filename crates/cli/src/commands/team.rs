//! `troupe team status|log|inbox|send|stop|requests`: the team seen (and written to) from
//! another terminal.

use super::team_status::Paint;
use crate::args::{TeamArgs, TeamCommand};
use crate::render::sanitize::{errln, json_line, out, outln};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use troupe_agent::transcript::now_ms;
use troupe_protocol::{Envelope, Event, MailKind};
use troupe_store::{Areas, EventCursor, SharedStore, TeamStore};
use troupe_team::protocols::answer::{answer_as_person, person_id, Verdict};
use troupe_team::protocols::list::{list, parse_status, requests_table};
use troupe_team::protocols::shutdown::{force_stop_in_store, request_shutdown, Asked, ForcePolicy};
use troupe_team::protocols::StoreCourier;
use troupe_team::shared::deliver;
use troupe_team::LEAD;

/// The `.troupe` directory the team subcommands look in.
pub fn troupe_dir(args: &TeamArgs) -> Result<PathBuf> {
    let dir = crate::workspace::root(args.place.cwd.as_deref())?;
    Ok(dir.join(".troupe"))
}

/// The person at this terminal, as recorded in answers and mail: `user:$USER`.
pub fn person() -> String {
    person_id(&std::env::var("USER").unwrap_or_else(|_| "user".into()))
}

/// Prices with the workspace's `pricing`, so the costs a team command shows are the ones the
/// lead's `/cost` and json result show. Settings that do not load are reported where they decide
/// something (the store); here they leave the list prices.
pub fn load_pricing(workspace: &Path) {
    if let Ok(loaded) = crate::settings::load(workspace, None) {
        crate::cost::set_pricing(&loaded.settings.pricing);
    }
}

/// The team's store, on the backend `--store`/`TROUPE_STORE`/the settings choose: `--team`,
/// else the only running team, else the most recently active one (`team_pick`).
pub async fn open(args: &TeamArgs) -> Result<SharedStore> {
    let troupe_dir = troupe_dir(args)?;
    let dir = troupe_dir.parent().map(PathBuf::from).unwrap_or_default();
    load_pricing(&dir);
    let choice = crate::store::choose_for(args.place.store.as_deref(), &dir)?;
    let team = crate::team_pick::pick(args.place.team.as_deref(), &choice, &troupe_dir)?;
    match crate::store::open_existing(&choice, &troupe_dir, &team).await? {
        Some(store) => Ok(store),
        None => bail!(
            "no team '{team}' in {} (a lead creates one: `troupe`, or `troupe --team {team}` for this name)",
            choice.describe(&troupe_dir),
        ),
    }
}

/// Every agent's tokens and cost as the store last saw them: the lead's as it published them
/// (its model prices the teammates that run on the team's default), then each teammate's.
fn agent_costs(roster: &troupe_protocol::Roster) -> Vec<crate::cost::AgentCost> {
    let lead = roster.lead_usage.clone().unwrap_or_default();
    crate::cost::breakdown(&lead, Default::default(), Some(roster))
}

/// Formats an event as one human-readable line: its time of day (UTC), agent, kind, detail.
pub fn event_line(event: &Event) -> String {
    event.human()
}

/// Runs a team subcommand; returns the exit code.
pub fn run(args: &TeamArgs) -> Result<i32> {
    let speaks_as_person = match &args.command {
        TeamCommand::Approve { .. } => Some("team approve"),
        TeamCommand::Reject { .. } => Some("team reject"),
        TeamCommand::Send { .. } => Some("team send"),
        TeamCommand::Stop { .. } => Some("team stop"),
        TeamCommand::Watch => Some("team watch"),
        _ => None,
    };
    if let Some(why) = speaks_as_person.and_then(crate::person_guard::refusal) {
        errln!("troupe: {why}");
        return Ok(1);
    }
    if let TeamCommand::Watch = args.command {
        return super::team_watch::run(args);
    }
    crate::block_on(run_on_store(args))?
}

/// The subcommands that read or change the team's store, on a runtime of their own.
async fn run_on_store(args: &TeamArgs) -> Result<i32> {
    let store = open(args).await?;
    match &args.command {
        TeamCommand::Status { json } => {
            // A task in progress belongs to a live owner: what dead ones hold goes back first.
            for t in troupe_team::liveness::release_ghost_tasks(&StoreCourier(&*store)).await? {
                errln!("task {} went back to the board: {}", t.id, release_note(&t));
            }
            let roster = troupe_team::shared::roster_with_doing(&*store).await?;
            let agents = agent_costs(&roster);
            if *json {
                let mut value = super::team_status::json(&*store).await?;
                value["agents"] = agents.iter().map(crate::cost::AgentCost::to_json).collect();
                println!("{}", json_line(&serde_json::to_string_pretty(&value)?));
            } else {
                // Sanitized cell by cell already, so that its colour codes survive.
                print!(
                    "{}",
                    super::team_status::human(&*store, Paint::for_stdout()).await?
                );
                out!("{}", troupe_team::render::background_table(&roster));
                if !roster.members.is_empty() || roster.lead_usage.is_some() {
                    out!("\n{}", crate::cost::table(&agents));
                }
            }
        }
        TeamCommand::Log { follow, agent } => {
            if let Some(name) = agent {
                if let Err(why) = super::team_names::known(&*store, name).await {
                    errln!("troupe: {why}");
                    return Ok(1);
                }
            }
            return log(&store, *follow, agent.as_deref()).await;
        }
        TeamCommand::Tail { name, lines } => {
            return super::team_tail::run(&store, name, *lines).await
        }
        TeamCommand::Watch => unreachable!("handled before the store is opened"),
        TeamCommand::Approve { request_id, reason } => {
            return answer(&*store, request_id, Verdict::Approve, reason.clone()).await
        }
        TeamCommand::Reject { request_id, reason } => {
            return answer(&*store, request_id, Verdict::Reject, reason.clone()).await
        }
        TeamCommand::Inbox { agent } => {
            if let Err(why) = super::team_names::known(&*store, agent).await {
                errln!("troupe: {why}");
                return Ok(1);
            }
            let batch = store.peek(agent).await?;
            if batch.messages.is_empty() {
                outln!("no unread mail for {agent}");
            }
            for env in &batch.messages {
                outln!(
                    "[{}] {} from {}: {}",
                    env.id,
                    env.kind.as_str(),
                    env.from,
                    env.content
                );
            }
            for bad in &batch.corrupt {
                errln!(
                    "warning: corrupt line at byte {} skipped: {}",
                    bad.offset,
                    bad.error
                );
            }
        }
        TeamCommand::Send { agent, text } => {
            if let Err(why) = super::team_names::known(&*store, agent).await {
                errln!("troupe: {why}");
                return Ok(1);
            }
            let env = Envelope::new(
                MailKind::Message,
                person(),
                agent.clone(),
                text.clone(),
                now_ms(),
            );
            deliver(&*store, &env).await?;
            outln!("sent to {agent} (id {})", env.id);
        }
        TeamCommand::Stop {
            name,
            force,
            reason,
        } => {
            if let Err(why) = super::team_names::teammate(&*store, name).await {
                errln!("troupe: {why}");
                return Ok(1);
            }
            return stop(&*store, name, *force, reason.clone()).await;
        }
        TeamCommand::Requests { status, json } => {
            let status = status
                .as_deref()
                .map(parse_status)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--status: {e}"))?;
            let requests = list(&StoreCourier(&*store), status).await?;
            if *json {
                println!("{}", json_line(&serde_json::to_string_pretty(&requests)?));
            } else if requests.is_empty() {
                outln!("no requests");
            } else {
                out!("{}", requests_table(&requests, now_ms()));
            }
        }
    }
    Ok(0)
}

/// The note of a task's latest transition (why it was given back).
fn release_note(task: &troupe_protocol::Task) -> String {
    task.history
        .last()
        .and_then(|t| t.note.clone())
        .unwrap_or_default()
}

/// `troupe team stop <name> [--force]`: without `--force`, a shutdown request sent as the
/// lead (the teammate answers it like any other); with `--force`, an operator override that
/// stops it at once, no expiry needed.
async fn stop(
    store: &dyn TeamStore,
    name: &str,
    force: bool,
    reason: Option<String>,
) -> Result<i32> {
    if force {
        let m = force_stop_in_store(store, name, ForcePolicy::Override, &person()).await?;
        outln!(
            "force-stopped {} (epoch {}): status stopped",
            m.name,
            m.epoch
        );
        return Ok(0);
    }
    match request_shutdown(&StoreCourier(store), LEAD, name, reason).await? {
        Asked::Opened(r) => outln!(
            "shutdown request {} sent to {} (pending); its answer goes to the lead's inbox. `troupe team requests` shows where it stands",
            r.id, r.to
        ),
        Asked::AlreadyPending(r) => outln!(
            "a shutdown request to {} is already pending: {}",
            r.to, r.id
        ),
    }
    Ok(0)
}

/// `troupe team log [--follow] [--agent NAME]`: the event log (one agent's events only, with
/// `--agent`); with `--follow`, each append is printed as
/// the store's change notifications report it (nothing polls), reading only what was added.
async fn log(store: &SharedStore, follow: bool, agent: Option<&str>) -> Result<i32> {
    let print = async |cursor: EventCursor| -> Result<EventCursor> {
        let read = store.read_events(cursor).await?;
        let wanted = |e: &&Event| agent.is_none_or(|a| e.agent.as_deref() == Some(a));
        for event in read.events.iter().filter(wanted) {
            outln!("{}", event_line(event));
        }
        if read.corrupt > 0 {
            errln!(
                "warning: {} corrupt line(s) of events.jsonl skipped",
                read.corrupt
            );
        }
        Ok(read.next)
    };
    if !follow {
        print(EventCursor::START).await?;
        return Ok(0);
    }
    // Watching starts before the first read, so no append between the two is missed.
    let mut feed = store.watch_changes().await?;
    let mut cursor = print(EventCursor::START).await?;
    loop {
        while !feed.changed().await.intersects(Areas::EVENTS) {}
        cursor = print(cursor).await?;
    }
}

/// `troupe team approve|reject <id> [--reason]`: the person answers a pending request in the
/// place of its addressee, through the request FSM (exit 1 when it refuses).
async fn answer(
    store: &dyn TeamStore,
    id: &str,
    verdict: Verdict,
    reason: Option<String>,
) -> Result<i32> {
    let me = person();
    match answer_as_person(&StoreCourier(store), &me, id, verdict, reason).await {
        Ok(r) => {
            outln!(
                "{} {} request {} of {} (addressed to {}), recorded as {me}; {} has been told",
                verdict.past(),
                r.kind,
                r.id,
                r.from,
                r.to,
                r.from
            );
            Ok(0)
        }
        Err(e) => {
            errln!("troupe: {e}");
            Ok(1)
        }
    }
}
