//! `troupe teammate`: one teammate as its own process on the team's store.
//!
//! The process holds the teammate's lease for its whole life (inherited from the lead that
//! started it, or taken at start), so it is alive exactly as long as it runs, and a second
//! live process of the same name is refused. SIGTERM ends the member at its next round
//! boundary, leaving it resumable, and the process exits 0: it stopped because it was asked
//! to, so a supervisor restarting on failure has nothing to restart.

use crate::args::TeammateArgs;
use crate::mcp::McpExtension;
use crate::setup::{model_config, workspace_root};
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Duration;
use troupe_agent::{effective_policy, PermissionFlags};
use troupe_store::Lease;
use troupe_team::{liveness, member, Team, TeamConfig, TeammateMode};

/// How long the member may take to finish its round after SIGTERM before the process ends
/// anyway (the lead waits as long for its in-process teammates).
const STOP_LIMIT: Duration = crate::headless::STOP_LIMIT;

/// Exit code when the round did not finish within [`STOP_LIMIT`] after SIGTERM.
const EXIT_TERMINATED: i32 = 128 + libc::SIGTERM;

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    // A lead hands its teammate processes their whole configuration (`--config-file -`).
    let args = &crate::commands::teammate_launch::resolve(args)?;
    let workspace = workspace_root(&args.agent)?;
    // The same settings files as the lead that spawned it, plus its `--settings`.
    let mut loaded = crate::settings::load_sources(
        &workspace,
        args.agent.settings.as_deref(),
        args.setting_sources.as_deref(),
    )?;
    // The lead's decision (passed in the environment), else a script's.
    let workspace_servers = crate::trust::apply(
        &workspace,
        &mut loaded,
        args.agent.mcp.strict_mcp_config,
        crate::trust::Asking::Script,
    )?;
    crate::settings::apply_env(&loaded.settings);
    crate::settings::apply_command_env(&loaded);
    let model = model_config(&args.agent, &loaded.settings)?;
    // The rules of the lead that spawned this teammate, passed on one by one.
    let flags = PermissionFlags {
        mode: args.agent.permission_mode.clone(),
        allow: args.allow_rules.clone(),
        ask: args.ask_rules.clone(),
        deny: args.deny_rules.clone(),
    };
    let policy = effective_policy(&loaded.settings.permissions, &flags)
        .context("invalid permission rule passed to the teammate")?;
    // Its own connections to the same servers (one per server per process).
    let mcp = crate::mcp::manager(
        &workspace,
        &loaded,
        &args.agent.mcp,
        &policy,
        workspace_servers,
    )?;
    let store_choice = crate::store::choose(args.agent.store.as_deref(), Some(&loaded.settings))?;
    let mut settings = loaded.settings;
    crate::settings::apply_flags(&mut settings, &args.agent);
    let settings = Arc::new(settings);
    let troupe_dir = workspace.join(".troupe");
    // The lead passes its team; a person starting one by hand joins the team running here.
    let team = crate::team_pick::pick(args.team.as_deref(), &store_choice, &troupe_dir)?;
    let store = crate::commands::teammate_start::open_store(&store_choice, &troupe_dir, &team)?;
    let hooks = crate::hooks::extension(&settings, &workspace, policy.mode, store.clone())?
        .for_teammates(&team);
    let added_dirs = crate::settings::added_dirs(&args.agent, &settings, &workspace)?;
    // The user's home, as the lead has it: the user's memory files and skills.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let skills = crate::setup::project_skills(&workspace, home.as_deref());
    let agents =
        crate::subagents::definitions(&workspace, home.as_deref(), crate::subagents::Report::Quiet);
    let config = TeamConfig {
        agents,
        mcp_servers: mcp.names().into_iter().map(str::to_string).collect(),
        home,
        added_dirs,
        team: team.clone(),
        troupe_dir: troupe_dir.clone(),
        workspace,
        client: crate::setup::model_client(&model, &settings),
        model,
        max_tokens: args.agent.max_tokens,
        policy,
        mode: TeammateMode::InProcess,
        exe: None,
        settings,
        extensions: vec![
            Arc::new(hooks),
            Arc::new(McpExtension::new(mcp.clone())),
            crate::cron::extension(&troupe_dir, &team),
            skills,
        ],
        memory_sources: crate::settings::memory_sources(args.setting_sources.as_deref()),
        // It starts no teammate processes of its own.
        process_options: serde_json::Value::Null,
    };
    crate::setup::exclude_troupe_dir(&config.workspace);
    // What it does, one line each, on stderr (a terminal, or the log the lead gives it).
    let sink: troupe_team::NoticeSink = Some(Arc::new(|n: troupe_team::Notice| {
        eprintln!(
            "{}",
            crate::render::sanitize::terminal(&crate::render::text::notice_line(&n))
        );
    }));
    let team = Team::open(config, store, sink)?;
    // Held until this function returns: after the member's tasks are back on the board.
    let lease = take_lease(&team, args)?;
    let spec = team.join(
        &lease,
        args.name(),
        args.role.as_deref(),
        args.prompt.clone(),
        args.agent.model.clone(),
    )?;
    let runtime = crate::setup::agent_runtime()?;
    let shared = team.shared().clone();
    let (name, epoch) = (spec.name.clone(), spec.epoch);
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
            member::fail(&shared, &name, epoch, &reason);
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
    if let Some(why) = liveness::end_note(&*shared.store, &name) {
        if let Err(e) = liveness::release_tasks_of(&*shared, &name, &why) {
            tracing::warn!(error = %e, "could not give the member's tasks back to the board");
        }
    }
    drop(lease);
    Ok(code)
}

/// The teammate's lease: the one the lead handed down (`--lease`), else taken now (see
/// [`crate::commands::teammate_start::take_lease`]).
fn take_lease(team: &Team, args: &TeammateArgs) -> Result<Lease> {
    crate::commands::teammate_start::take_lease(&team.shared().store, team.name(), args)
}
