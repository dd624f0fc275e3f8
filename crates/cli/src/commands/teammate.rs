//! `troupe teammate`: one teammate as its own process on the team's store.

use crate::args::TeammateArgs;
use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_model::{ModelConfig, Provider};
use troupe_team::{member, Team, TeamConfig, TeammateMode};

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    let dir = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let workspace = dir
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", dir.display()))?;
    let provider = match args.provider.as_deref() {
        None => None,
        Some(p) => Some(
            p.parse::<Provider>()
                .map_err(|e| anyhow::anyhow!("--provider {p}: {e}"))?,
        ),
    };
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let model = ModelConfig::resolve(provider, args.model.clone(), &env)?;
    let mode: PermissionMode = args
        .permission_mode
        .parse()
        .map_err(|e| anyhow::anyhow!("--permission-mode: {e}"))?;
    let rules = Rules::parse(&[], &[], &[]).context("building permission rules")?;
    let config = TeamConfig {
        team: args.team.clone(),
        troupe_dir: workspace.join(".troupe"),
        workspace,
        model,
        max_tokens: args.max_tokens,
        policy: Policy { mode, rules },
        mode: TeammateMode::InProcess,
        exe: None,
    };
    let team = Team::open(config, None)?;
    let spec = team.join(
        &args.name,
        args.role.as_deref(),
        args.prompt.clone(),
        args.model.clone(),
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
    match result {
        Ok(()) => Ok(0),
        Err(reason) => {
            member::fail(&shared, &name, epoch, &reason);
            eprintln!("troupe teammate {name}: failed: {reason}");
            Ok(1)
        }
    }
}
