//! `troupe task list|show|create|claim|update|complete`: the team's task board from another
//! terminal, for people and scripts (`--json` prints tasks exactly as stored). Exit codes: 0
//! done, 1 refused (the message says why: the owner, the blockers, the cycle…), 2 usage.
//! Every change goes through the same store FSM as the agents' tools, and wakes idle
//! claimers and tells waiting owners the same way.

use crate::args::{TaskArgs, TaskCommand, TaskStatusArg};
use crate::render::sanitize::{errln, json_line, terminal};
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::PathBuf;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{
    validate_agent_name, Envelope, MailKind, Roster, Task, TaskStatus, USER_OWNER_PREFIX,
};
use troupe_store::{NewTask, SharedStore, TaskFilter, TeamStore};
use troupe_team::board::render::{corrupt_lines, task_detail, tasks_table};
use troupe_team::board::{self, Change};
use troupe_team::protocols::StoreCourier;
use troupe_team::shared::{deliver, members_list};
use troupe_team::LEAD;

/// Exit code of a usage error (as clap's own).
const USAGE: i32 = 2;

impl From<TaskStatusArg> for TaskStatus {
    fn from(s: TaskStatusArg) -> TaskStatus {
        match s {
            TaskStatusArg::Pending => TaskStatus::Pending,
            TaskStatusArg::InProgress => TaskStatus::InProgress,
            TaskStatusArg::Completed => TaskStatus::Completed,
            TaskStatusArg::Failed => TaskStatus::Failed,
            TaskStatusArg::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// Opens the team's store: `--team`, else the only running team, else the most recently
/// active one, else `default`. Only `create` may start a board for a team no lead has run yet (named with
/// `--team`); anything else on a missing team is a mistyped `--team` or `--cwd`.
async fn open(args: &TaskArgs) -> Result<SharedStore> {
    let dir = crate::workspace::root(args.place.cwd.as_deref())?;
    let troupe_dir: PathBuf = dir.join(".troupe");
    let creating = matches!(args.command, TaskCommand::Create { .. });
    let choice = crate::store::choose_for(args.place.store.as_deref(), &dir)?;
    let team = crate::team_pick::pick(args.place.team.as_deref(), &choice, &troupe_dir)?;
    let existing = if creating {
        crate::workspace::before_creating_troupe_dir(&dir);
        Some(crate::store::open(&choice, &troupe_dir, &team).await?)
    } else {
        crate::store::open_existing(&choice, &troupe_dir, &team).await?
    };
    let Some(store) = existing else {
        bail!(
            "no team '{team}' in {} (a lead creates it with `troupe --team {team}`, or `troupe task create --team {team}` starts its board)",
            choice.describe(&troupe_dir),
        );
    };
    if creating {
        store
            .update_roster(&mut |roster: &mut Roster| {
                if roster.team.is_empty() {
                    roster.team = team.clone();
                }
                if roster.lead.is_empty() {
                    roster.lead = LEAD.to_string();
                }
            })
            .await?;
    }
    Ok(store)
}

/// Who acts: `--as`, else the person at this terminal.
fn actor(args: &TaskArgs) -> String {
    args.actor.clone().unwrap_or_else(|| {
        let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
        format!("{USER_OWNER_PREFIX}{user}")
    })
}

/// Checks an owner or actor name: `user:<name>` for a person, `lead`, or a teammate on the
/// roster. `Err` holds the message of a refusal.
async fn check_owner(store: &dyn TeamStore, name: &str) -> Result<(), String> {
    if let Some(person) = name.strip_prefix(USER_OWNER_PREFIX) {
        return validate_agent_name(person)
            .map_err(|e| format!("invalid person name in '{name}': {e}"));
    }
    if name == LEAD {
        return Ok(());
    }
    let roster = store.roster().await.map_err(|e| e.to_string())?;
    if roster.get(name).is_some() {
        Ok(())
    } else {
        Err(format!(
            "no teammate named '{name}' on team '{}'; a person owns a task as user:<name>. Members: {}",
            roster.team,
            members_list(&roster)
        ))
    }
}

/// Writes to stdout; a reader that went away (`troupe task list | head`) ends the output
/// quietly instead of failing.
fn say(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Text for the terminal (control characters a task's text may hold are made visible).
fn say_text(text: &str) -> Result<()> {
    say(&terminal(text))
}

fn print_json<T: Serialize>(value: &T) -> Result<()> {
    say(&format!(
        "{}\n",
        json_line(&serde_json::to_string_pretty(value)?)
    ))
}

/// Prints a task after a change: JSON, or one line.
fn print_task(args: &TaskArgs, t: &Task, told: &[String]) -> Result<()> {
    if args.json {
        return print_json(t);
    }
    let owner = t
        .owner
        .as_deref()
        .map(|o| format!(", owned by {o}"))
        .unwrap_or_default();
    say_text(&format!(
        "task {} ({}): {}{owner}\n",
        t.id, t.subject, t.status
    ))?;
    if !told.is_empty() {
        say_text(&format!(
            "told {} (their tasks wait on it)\n",
            told.join(", ")
        ))?;
    }
    Ok(())
}

/// Runs a task subcommand; returns the exit code.
pub async fn run(args: &TaskArgs) -> Result<i32> {
    let store = open(args).await?;
    let by = actor(args);
    // The default (`user:$USER`) is whoever is at this terminal, whatever their login name.
    if args.actor.is_some() {
        check_owner(&*store, &by)
            .await
            .map_err(|e| anyhow::anyhow!("--as: {e}"))?;
    }
    let courier = StoreCourier(&*store);
    match &args.command {
        TaskCommand::List { status, owner } => {
            let board = store.list_tasks(&TaskFilter::default()).await?;
            let filter = TaskFilter {
                status: status.map(TaskStatus::from),
                owner: owner.clone(),
            };
            let all = board::blocker_status(&board.tasks);
            let shown: Vec<&Task> = board.tasks.iter().filter(|t| filter.matches(t)).collect();
            for line in corrupt_lines(&board.corrupt) {
                errln!("warning: {line}");
            }
            if args.json {
                print_json(&shown)?;
            } else if shown.is_empty() {
                say_text("no tasks\n")?;
            } else {
                let shown: Vec<Task> = shown.into_iter().cloned().collect();
                say_text(&tasks_table(&shown, &all))?;
            }
        }
        TaskCommand::Show { id } => {
            let t = store.get_task(*id).await?;
            if args.json {
                print_json(&t)?;
            } else {
                let board = store.list_tasks(&TaskFilter::default()).await?;
                say_text(&task_detail(
                    &t,
                    &board::blocker_status(&board.tasks),
                    now_ms(),
                ))?;
            }
        }
        TaskCommand::Create {
            subject,
            description,
            blocked_by,
        } => {
            let t = store
                .create_task(&NewTask {
                    subject: subject.clone(),
                    description: description.clone().unwrap_or_default(),
                    blocked_by: blocked_by.clone(),
                    created_by: by.clone(),
                })
                .await?;
            board::after_change(&courier, &t, Change::Created, &by).await;
            print_task(args, &t, &[])?;
        }
        TaskCommand::Claim { id, owner } => {
            check_owner(&*store, owner)
                .await
                .map_err(|e| anyhow::anyhow!("--owner: {e}"))?;
            let t = store.claim_task(*id, owner, now_ms()).await?;
            tell_new_owner(&*store, &by, &t).await;
            print_task(args, &t, &[])?;
        }
        TaskCommand::Update {
            id,
            status,
            description,
            result,
            blocked_by,
        } => {
            let status = status.map(TaskStatus::from);
            if status.is_none() && description.is_none() && blocked_by.is_none() {
                errln!("troupe: nothing to update: give --status, --description, --result or --blocked-by");
                return Ok(USAGE);
            }
            if let Some(problem) = result_problem(status, result.as_deref()) {
                errln!("troupe: {problem}");
                return Ok(USAGE);
            }
            let mut before = None;
            let t = store
                .update_task(*id, &mut |t, blockers| {
                    before = Some(t.status);
                    let now = now_ms();
                    if let Some(d) = description {
                        t.edit_description(&by, d.clone(), now)?;
                    }
                    if let Some(list) = blocked_by {
                        t.edit_blocked_by(&by, list.clone(), now)?;
                    }
                    let result = result.clone().unwrap_or_default();
                    match status {
                        None => Ok(()),
                        Some(TaskStatus::Pending) => {
                            t.release(&by, format!("released by {by}"), now)
                        }
                        Some(TaskStatus::InProgress) => t.claim(&by, blockers, now),
                        Some(TaskStatus::Completed) => t.complete(&by, result, now),
                        Some(TaskStatus::Failed) => t.fail(&by, result, now),
                        Some(TaskStatus::Cancelled) => {
                            t.cancel(&by, Some(result).filter(|r| !r.is_empty()), now)
                        }
                    }
                })
                .await?;
            let change = match before {
                Some(s) if s != t.status => Change::to_status(t.status),
                _ => Change::Edited,
            };
            let told = board::after_change(&courier, &t, change, &by);
            if change == Change::Claimed {
                tell_new_owner(&*store, &by, &t).await;
            }
            print_task(args, &t, &told.await)?;
        }
        TaskCommand::Complete { id, result } => {
            if result.trim().is_empty() {
                errln!("troupe: --result is empty: say what came of the task");
                return Ok(USAGE);
            }
            let t = store
                .update_task(*id, &mut |t, _| t.complete(&by, result.clone(), now_ms()))
                .await?;
            let told = board::after_change(&courier, &t, Change::Completed, &by);
            print_task(args, &t, &told.await)?;
        }
    }
    Ok(0)
}

/// Why `--result` does not fit the status asked for, if it does not.
fn result_problem(status: Option<TaskStatus>, result: Option<&str>) -> Option<&'static str> {
    let given = result.is_some_and(|r| !r.trim().is_empty());
    match status {
        None if result.is_some() => {
            Some("--result goes with --status completed, failed or cancelled (or use `troupe task complete`)")
        }
        Some(TaskStatus::Completed | TaskStatus::Failed) if !given => {
            Some("--status completed or failed needs --result saying what came of it")
        }
        _ => None,
    }
}

/// A task claimed for a teammate (or the lead) from here is news to it: its owner is told by
/// mail, which also wakes it. A person who claims knows already.
async fn tell_new_owner(store: &dyn TeamStore, by: &str, t: &Task) {
    let Some(owner) = t.owner.as_deref() else {
        return;
    };
    if owner == by || owner.starts_with(USER_OWNER_PREFIX) {
        return;
    }
    let text = format!("{by} gave you a task.\n{}", board::work_prompt(t));
    let env = Envelope::new(MailKind::Message, by, owner, text, now_ms());
    if let Err(e) = deliver(store, &env).await {
        errln!(
            "warning: task {} is {owner}'s, but they could not be told: {e}",
            t.id
        );
    }
}
