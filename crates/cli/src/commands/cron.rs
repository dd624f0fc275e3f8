//! `troupe cron list|add|remove`: the workspace's scheduled prompts from any terminal. A
//! running lead (REPL or headless) fires them; one missed while none ran fires at the next
//! start, marked late.

use crate::args::{CronArgs, CronCommand};
use crate::render::sanitize::{json_line, out, outln};
use anyhow::{bail, Result};
use troupe_cron::{CronFile, CronJob, Deliver, ScheduleKind};

/// Runs a cron subcommand; returns the exit code.
pub fn run(args: &CronArgs) -> Result<i32> {
    let dir = crate::workspace::root(args.cwd.as_deref())?;
    let troupe_dir = dir.join(".troupe");
    let file = CronFile::in_dir(&troupe_dir);
    match &args.command {
        CronCommand::List => {
            // Every team's jobs, unless one is named.
            let jobs: Vec<CronJob> = file
                .list()?
                .into_iter()
                .filter(|j| args.team.as_ref().is_none_or(|team| &j.team == team))
                .collect();
            if args.json {
                println!("{}", json_line(&serde_json::to_string_pretty(&jobs)?));
            } else if jobs.is_empty() {
                match &args.team {
                    Some(team) => outln!("no scheduled prompts for team {team}"),
                    None => outln!("no scheduled prompts"),
                }
            } else {
                out!("{}", table(&jobs));
            }
        }
        CronCommand::Add {
            schedule,
            prompt,
            to,
        } => {
            if prompt.trim().is_empty() {
                bail!("the prompt is empty");
            }
            let choice = crate::store::StoreChoice::File;
            let team = crate::team_pick::pick(args.team.as_deref(), &choice, &troupe_dir)?;
            if troupe_store::file::exists(&troupe_dir, &team) {
                crate::cron::TeamDelivery::new(&troupe_dir)
                    .check(&team, to)
                    .map_err(anyhow::Error::msg)?;
            }
            let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
            let now = troupe_cron::now_ms();
            let job = CronJob::new(schedule, prompt, &team, to, &format!("user:{user}"), now)?;
            crate::workspace::before_creating_troupe_dir(&dir);
            let job = file.add(job)?;
            if args.json {
                println!("{}", json_line(&serde_json::to_string_pretty(&job)?));
            } else {
                outln!(
                    "scheduled {} for {}: next at {} (a running lead delivers it)",
                    job.id,
                    job.to,
                    job.next_shown()
                );
            }
        }
        CronCommand::Remove { id } => {
            let job = file.remove(id)?;
            outln!("removed {} ({}: {})", job.id, job.schedule, job.prompt);
        }
    }
    Ok(0)
}

/// The jobs as a table, soonest first.
fn table(jobs: &[CronJob]) -> String {
    let mut rows = vec![[
        "ID".to_string(),
        "SCHEDULE".into(),
        "TEAM".into(),
        "TO".into(),
        "NEXT".into(),
        "PROMPT".into(),
    ]];
    for job in jobs {
        let schedule = match job.kind {
            ScheduleKind::Once => format!("once ({})", job.schedule),
            ScheduleKind::Recurring => job.schedule.clone(),
        };
        rows.push([
            job.id.clone(),
            schedule,
            job.team.clone(),
            job.to.clone(),
            job.next_shown(),
            job.prompt.clone(),
        ]);
    }
    troupe_team::render::columns(&rows)
}
