//! `troupe team status|log|inbox|send|stop|requests`: the team seen (and written to) from
//! another terminal.

use crate::args::{TeamArgs, TeamCommand};
use crate::render::sanitize::{errln, json_line, out, outln};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::Duration;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{Envelope, Event, MailKind};
use troupe_store::{EventCursor, SharedStore, TeamStore};
use troupe_team::protocols::list::{list, parse_status, requests_table};
use troupe_team::protocols::shutdown::{force_stop_in_store, request_shutdown, Asked, ForcePolicy};
use troupe_team::protocols::StoreCourier;
use troupe_team::render::roster_table;
use troupe_team::shared::deliver;
use troupe_team::LEAD;

fn open(args: &TeamArgs) -> Result<SharedStore> {
    let dir = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let troupe_dir: PathBuf = dir.join(".troupe");
    if !troupe_store::file::exists(&troupe_dir, &args.team) {
        bail!(
            "no team '{}' in {} (a lead creates it with `troupe --team {}`)",
            args.team,
            troupe_dir.display(),
            args.team
        );
    }
    Ok(troupe_store::file::open(&troupe_dir, &args.team)?)
}

/// Adds `tasks: [{id, subject}]` (its in-progress tasks) to each member of a roster's JSON.
fn with_member_tasks(roster: &mut serde_json::Value, tasks: &[troupe_protocol::Task]) {
    let Some(members) = roster.get_mut("members").and_then(|m| m.as_array_mut()) else {
        return;
    };
    for m in members {
        let name = m.get("name").and_then(|n| n.as_str()).unwrap_or_default();
        let held: Vec<_> = troupe_team::board::tasks_of(tasks, name)
            .iter()
            .map(|t| serde_json::json!({"id": t.id, "subject": t.subject}))
            .collect();
        m["tasks"] = serde_json::Value::Array(held);
    }
}

/// Formats an event as one human-readable line with a local-ish UTC time.
pub fn event_line(event: &Event) -> String {
    let secs = event.ts / 1000;
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02} {}", event.human())
}

/// Runs a team subcommand; returns the exit code.
pub fn run(args: &TeamArgs) -> Result<i32> {
    let store = open(args)?;
    match &args.command {
        TeamCommand::Status { json } => {
            // A task in progress belongs to a live owner: what dead ones hold goes back first.
            for t in troupe_team::liveness::release_ghost_tasks(&StoreCourier(&*store))? {
                errln!("task {} went back to the board: {}", t.id, release_note(&t));
            }
            let roster = troupe_team::shared::roster_with_doing(&*store)?;
            let tasks = store.list_tasks(&Default::default())?.tasks;
            if *json {
                let mut value = serde_json::to_value(&roster)?;
                with_member_tasks(&mut value, &tasks);
                println!("{}", json_line(&serde_json::to_string_pretty(&value)?));
            } else if roster.members.is_empty() {
                outln!("team {} has no teammates yet", args.team);
            } else {
                out!("{}", roster_table(&roster, &tasks));
                out!("{}", troupe_team::render::background_table(&roster));
            }
        }
        TeamCommand::Log { follow } => {
            let mut cursor = EventCursor::START;
            loop {
                let read = store.read_events(cursor)?;
                for event in &read.events {
                    outln!("{}", event_line(event));
                }
                if read.corrupt > 0 {
                    errln!(
                        "warning: {} corrupt line(s) of events.jsonl skipped",
                        read.corrupt
                    );
                }
                cursor = read.next;
                if !follow {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        TeamCommand::Inbox { agent } => {
            let batch = store.peek(agent)?;
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
            let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
            let env = Envelope::new(
                MailKind::Message,
                format!("user:{user}"),
                agent.clone(),
                text.clone(),
                now_ms(),
            );
            deliver(&*store, &env)?;
            outln!("sent to {agent} (id {})", env.id);
        }
        TeamCommand::Stop {
            name,
            force,
            reason,
        } => return stop(&*store, name, *force, reason.clone()),
        TeamCommand::Requests { status, json } => {
            let status = status
                .as_deref()
                .map(parse_status)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--status: {e}"))?;
            let requests = list(&StoreCourier(&*store), status)?;
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
fn stop(store: &dyn TeamStore, name: &str, force: bool, reason: Option<String>) -> Result<i32> {
    if force {
        let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
        let m = force_stop_in_store(store, name, ForcePolicy::Override, &format!("user:{user}"))?;
        outln!(
            "force-stopped {} (epoch {}): status stopped",
            m.name,
            m.epoch
        );
        return Ok(0);
    }
    match request_shutdown(&StoreCourier(store), LEAD, name, reason)? {
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
