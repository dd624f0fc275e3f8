//! `troupe teammate`: one teammate as its own process on the team's store.
//!
//! The process holds the teammate's lease for its whole life (inherited from the lead that
//! started it, or taken at start), so it is alive exactly as long as it runs, and a second
//! live process of the same name is refused. SIGTERM ends the member at its next round
//! boundary, leaving it resumable, and the process exits 0: it stopped because it was asked
//! to, so a supervisor restarting on failure has nothing to restart.

use crate::args::TeammateArgs;
use crate::setup::workspace_root;
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;
use troupe_store::Lease;
use troupe_team::{liveness, member, Team, TeammateMode};

/// How long the member may take to finish its round after SIGTERM before the process ends
/// anyway (the lead waits as long for its in-process teammates).
const STOP_LIMIT: Duration = crate::lead_run::STOP_LIMIT;

/// Exit code when the round did not finish within [`STOP_LIMIT`] after SIGTERM.
const EXIT_TERMINATED: i32 = 128 + libc::SIGTERM;

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    // A lead hands its teammate processes their whole configuration (`--config-file -`).
    let teammate = crate::commands::teammate_launch::resolve(args)?;
    let args = &teammate.args;
    let reasoning = match teammate.reasoning {
        Some(reasoning) => reasoning,
        // Started by hand: the environment's, as a lead without flags has it.
        None => crate::args_sdk::SdkArgs::default().reasoning(None, |key| {
            std::env::var(key).ok().filter(|v| !v.is_empty())
        })?,
    };
    // Resolved as the lead that spawned it resolved its own run, from the same sources: its
    // settings files and `--settings`, its trust decision (passed in the environment, else a
    // script's), its rules one by one, its model and reasoning.
    let run = crate::compose::resolve(crate::compose::Inputs {
        workspace: workspace_root(&args.agent)?,
        sources: &teammate.sources,
        model: &teammate.model,
        permissions: teammate.permissions,
        reasoning,
        asking: crate::trust::Asking::Script,
        report: crate::subagents::Report::Quiet,
    })?;
    let troupe_dir = run.troupe_dir.clone();
    // The lead passes its team; a person starting one by hand joins the team running here.
    let team = crate::team_pick::pick(args.team.as_deref(), &run.store, &troupe_dir)?;
    // The teammate's runtime, from the start: its store is opened and joined on it.
    let runtime = crate::setup::agent_runtime()?;
    let store = runtime.block_on(crate::commands::teammate_start::open_store(
        &run.store,
        &troupe_dir,
        &team,
    ))?;
    let mcp = run.mcp.clone();
    // What it does, one line each, on stderr (a terminal, or the log the lead gives it).
    let sink: troupe_team::NoticeSink = Some(Arc::new(|n: troupe_team::Notice| {
        eprintln!(
            "{}",
            crate::render::sanitize::terminal(&crate::render::notice::notice_line(&n))
        );
    }));
    let team = runtime.block_on(run.open_team(
        store,
        crate::compose::TeamSide {
            cron: crate::cron::extension(&troupe_dir, &team),
            name: team,
            mode: TeammateMode::InProcess,
            // It starts no teammate processes of its own.
            process_options: serde_json::Value::Null,
            notices: sink,
        },
    ))?;
    // Held until this function returns: after the member's tasks are back on the board.
    let lease = runtime.block_on(take_lease(&team, args))?;
    let spec = runtime.block_on(team.join(
        &lease,
        args.name(),
        args.role.as_deref(),
        args.prompt.clone(),
        args.agent.model.clone(),
    ))?;
    let shared = team.shared().clone();
    let (name, epoch) = (spec.name.clone(), spec.epoch);
    // Its telemetry under the team's and its own name (its own process, its own exporters).
    crate::telemetry::start(run.telemetry.as_ref(), &format!("{}/{name}", team.name()));
    eprintln!(
        "troupe teammate {name}: joined team '{}' (epoch {epoch}); working — Ctrl-C ends it at the round boundary",
        team.name()
    );
    // The process ends by SIGTERM (the lead's exit, a force-stop, a supervisor) at a round
    // boundary, or by the member's own end.
    let cancel = tokio_util::sync::CancellationToken::new();
    crate::signals::on_first_signal({
        let (cancel, name) = (cancel.clone(), spec.name.clone());
        move || {
            cancel.cancel();
            // To the teammate's log: why it is about to end (after the cancel, so whoever reads
            // this knows the member has been told).
            eprintln!("troupe teammate {name}: terminating: ending at the round boundary");
        }
    });
    mcp.start(runtime.handle());
    let result = runtime.block_on(async {
        let run = member::run(shared.clone(), spec, cancel.clone());
        tokio::pin!(run);
        tokio::select! {
            result = &mut run => Some(result),
            () = async {
                cancel.cancelled().await;
                tokio::time::sleep(STOP_LIMIT).await;
            } => None,
        }
    });
    mcp.shutdown();
    troupe_tools::process::end_all();
    let code = match result {
        Some(Ok(())) => 0,
        Some(Err(e)) => {
            let reason = e.to_string();
            runtime.block_on(member::fail(&shared, &name, epoch, &reason));
            eprintln!(
                "troupe teammate {name}: failed: {}",
                crate::render::sanitize::terminal(&reason)
            );
            1
        }
        None => {
            eprintln!(
                "troupe teammate {name}: the round did not finish within {}s of SIGTERM; ending it",
                STOP_LIMIT.as_secs()
            );
            EXIT_TERMINATED
        }
    };
    // The member is over in this process: its tasks go back while the lease is still held.
    runtime.block_on(async {
        if let Some(why) = liveness::end_note(&*shared.store, &name).await {
            if let Err(e) = liveness::release_tasks_of(&*shared, &name, &why).await {
                tracing::warn!(error = %e, "could not give the member's tasks back to the board");
            }
        }
    });
    drop(lease);
    Ok(code)
}

/// The teammate's lease: the one the lead handed down (`--lease`), else taken now (see
/// [`crate::commands::teammate_start::take_lease`]).
async fn take_lease(team: &Team, args: &TeammateArgs) -> Result<Lease> {
    crate::commands::teammate_start::take_lease(&team.shared().store, team.name(), args).await
}
