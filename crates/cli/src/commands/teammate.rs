//! `troupe teammate`: one teammate as its own process on the team's store.

use crate::args::TeammateArgs;
use crate::mcp::McpExtension;
use crate::setup::{model_config, workspace_root};
use anyhow::{Context, Result};
use std::sync::Arc;
use troupe_agent::{effective_policy, PermissionFlags};
use troupe_team::{member, Team, TeamConfig, TeammateMode};

/// Runs the teammate until it shuts down or fails; returns the exit code.
pub fn run(args: &TeammateArgs) -> Result<i32> {
    let workspace = workspace_root(&args.agent)?;
    // The same settings files as the lead that spawned it, plus its `--settings`.
    let loaded = crate::settings::load(&workspace, args.agent.settings.as_deref())?;
    crate::settings::apply_env(&loaded.settings);
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
    let mcp = crate::mcp::manager(&workspace, &loaded, &args.agent.mcp, &policy)?;
    let settings = Arc::new(loaded.settings);
    let config = TeamConfig {
        team: args.team.clone(),
        troupe_dir: workspace.join(".troupe"),
        workspace,
        model,
        max_tokens: args.agent.max_tokens,
        policy,
        mode: TeammateMode::InProcess,
        exe: None,
        settings_arg: args.agent.settings.clone(),
        settings,
        extensions: vec![Arc::new(McpExtension::new(mcp.clone()))],
        teammate_args: Vec::new(),
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
    mcp.start(runtime.handle());
    let result = runtime.block_on(member::run(shared.clone(), spec, cancel));
    mcp.shutdown();
    troupe_tools::process::end_all();
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
