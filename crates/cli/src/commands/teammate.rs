//! `troupe teammate`: one teammate as its own process on the team's store.

use crate::args::TeammateArgs;
use crate::setup::{model_config, permission_mode, workspace_root};
use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_agent::permissions::{Policy, Rules};
use troupe_team::{member, Team, TeamConfig, TeammateMode};

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    let workspace = workspace_root(&args.agent)?;
    let model = model_config(&args.agent)?;
    let mode = permission_mode(&args.agent)?;
    let rules = Rules::parse(&[], &[], &[]).context("building permission rules")?;
    let settings = crate::settings::load(&workspace)?;
    let config = TeamConfig {
        team: args.team.clone(),
        troupe_dir: workspace.join(".troupe"),
        workspace,
        model,
        max_tokens: args.agent.max_tokens,
        policy: Policy { mode, rules },
        mode: TeammateMode::InProcess,
        exe: None,
        sandbox: Arc::new(settings.sandbox),
    };
    let team = Team::open(config, None)?;
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
    let result = runtime.block_on(member::run(
        shared.clone(),
        spec,
        Arc::new(AtomicBool::new(false)),
    ));
    troupe_tools::process::end_all();
    match result {
        Ok(()) => Ok(0),
        Err(reason) => {
            member::fail(&shared, &name, epoch, &reason);
            eprintln!("troupe teammate {name}: failed: {reason}");
            Ok(1)
        }
    }
}
