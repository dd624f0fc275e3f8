//! The binary's side of a teammate process's launch (`troupe_team::launch`): `troupe teammate
//! --config-file` reading a launch back. The team's part says who the member is and what the
//! lead's recipe resolved (model, reasoning, output limit, permission policy); the options are
//! the lead's own [`Sources`], the very value its run was resolved from, so the teammate's run
//! is resolved from the same by construction.

use crate::args::TeammateArgs;
use crate::compose::{ModelChoice, Sources};
use anyhow::{Context, Result};
use std::io::Read;
use std::path::Path;
use troupe_agent::PermissionFlags;
use troupe_model::Reasoning;
use troupe_team::launch::ProcessLaunch;

/// A teammate process's configuration: who it is (its arguments) and what its run is resolved
/// from.
pub struct Teammate {
    /// The member: team, name, role, prompt, lease, and the workspace (`agent.cwd`).
    pub args: TeammateArgs,
    /// The settings, MCP, store, directory and definition options.
    pub sources: Sources,
    /// The model and output limit.
    pub model: ModelChoice,
    /// The permission mode and rules.
    pub permissions: PermissionFlags,
    /// Extended thinking and effort (`None`: the environment's, as for a lead without flags).
    pub reasoning: Option<Reasoning>,
}

/// The teammate's configuration: its command line, or, with `--config-file`, the launch it
/// names (`-`: standard input) in its place.
pub fn resolve(args: &TeammateArgs) -> Result<Teammate> {
    let Some(path) = &args.config_file else {
        return Ok(Teammate {
            sources: Sources::of_command_line(&args.agent, args.setting_sources.as_deref(), None),
            model: ModelChoice::of(&args.agent),
            permissions: PermissionFlags {
                mode: args.agent.permission_mode.clone(),
                allow: args.allow_rules.clone(),
                ask: args.ask_rules.clone(),
                deny: args.deny_rules.clone(),
            },
            reasoning: None,
            args: args.clone(),
        });
    };
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the teammate's configuration from standard input")?;
        text
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the teammate's configuration {}", path.display()))?
    };
    let mut launch = ProcessLaunch::from_json(&text)
        .map_err(|e| anyhow::anyhow!("--config-file {}: {e}", path.display()))?;
    // The lead's credentials, before anything resolves the model or the store.
    for (name, value) in std::mem::take(&mut launch.secrets) {
        troupe_tools::secrets::hold(&name, value);
    }
    // Its first turn continues the trace of the lead's turn that spawned it.
    if let Some(tp) = launch.traceparent.take() {
        troupe_protocol::trace_context::spawn(&launch.name, &tp);
    }
    apply(args, launch)
}

/// The teammate `launch` describes (`args` keeps what the launch does not say: `--no-wait`).
fn apply(args: &TeammateArgs, launch: ProcessLaunch) -> Result<Teammate> {
    let sources: Sources = match launch.options {
        serde_json::Value::Null => Sources::default(),
        value => serde_json::from_value(value)
            .context("the teammate launch's options are not this troupe's")?,
    };
    let mut out = args.clone();
    out.config_file = None;
    out.team = Some(launch.team);
    out.name = Some(launch.name);
    out.role = Some(launch.role);
    out.prompt = launch.prompt;
    out.lease = launch.lease;
    out.agent.cwd = Some(launch.workspace);
    // The member's model: `team.join` records it.
    out.agent.model = Some(launch.model.clone());
    Ok(Teammate {
        args: out,
        sources,
        model: ModelChoice {
            provider: Some(launch.provider),
            model: Some(launch.model),
            max_tokens: launch.max_tokens,
        },
        permissions: PermissionFlags {
            mode: Some(launch.permission_mode),
            allow: launch.allow_rules,
            ask: launch.ask_rules,
            deny: launch.deny_rules,
        },
        reasoning: Some(launch.reasoning),
    })
}
