//! `troupe teammate`: one teammate as its own process on the team's store.

use crate::args::TeammateArgs;
use crate::setup::{model_config, permission_mode, workspace_root};
use anyhow::{Context, Result};
use troupe_agent::permissions::{Policy, Rules};
use troupe_team::{member, Team, TeamConfig, TeammateMode};

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    let workspace = workspace_root(&args.agent)?;
    let model = model_config(&args.agent)?;
    let mode = permission_mode(&args.agent)?;
    // The rules of the lead that spawned this teammate, passed on one by one.
    let rules = Rules::parse(&args.allow_rules, &args.ask_rules, &args.deny_rules)
        .context("invalid permission rule passed to the teammate")?;
    let config = TeamConfig {
        team: args.team.clone(),
        troupe_dir: workspace.join(".troupe"),
        workspace,
        model,
        max_tokens: args.agent.max_tokens,
        policy: Policy { mode, rules },
        mode: TeammateMode::InProcess,
        exe: None,
    };
    let store = troupe_store::file::open(&config.troupe_dir, &config.team)
        .with_context(|| format!("opening team '{}'", config.team))?;
    let team = Team::open(config, store, None)?;
    let spec = team.join(
        &args.name,
        args.role.as_deref(),
        args.prompt.clone(),
        args.agent.model.clone(),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let shared = team.shared().clone();
    let (name, epoch) = (spec.name.clone(), spec.epoch);
    // The process ends by SIGTERM (the lead's exit) or by the member's own end.
    let cancel = tokio_util::sync::CancellationToken::new();
    let result = runtime.block_on(member::run(shared.clone(), spec, cancel));
    match result {
        Ok(()) => Ok(0),
        Err(reason) => {
            member::fail(&shared, &name, epoch, &reason);
            eprintln!(
                "troupe teammate {name}: failed: {}",
                crate::render::sanitize::terminal(&reason)
            );
            Ok(1)
        }
    }
}
