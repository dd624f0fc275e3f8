//! Turns command-line options into a ready lead: the run resolved once (`compose::resolve`),
//! its team, and the lead agent built from the run's recipe with the lead's role (identity,
//! tools, the `task` and team tools, the session transcript: new, continued or resumed).

use crate::args::{AgentArgs, RunArgs};
use crate::compose::{ModelChoice, Sources};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::permissions::split_rule_list;
use troupe_agent::session::{find_session, latest_session, new_session_id, session_path};
use troupe_agent::{Agent, AgentKind, Approver, PermissionFlags, Place, Role};
use troupe_catalog::SkillsExtension;
use troupe_mcp::McpManager;
use troupe_model::{ModelConfig, Provider};
use troupe_store::{Lease, StoreError};
use troupe_team::protocols::permission::Answerer;
use troupe_team::{LeadExtension, NoticeSink, Team, TeammateMode, LEAD};

/// The lead runtime's blocking threads at most (tokio's default is 512). Nothing an agent does
/// waits on this pool for a call that needs the pool again (the tool gates and the transcript
/// mirror await the store; the file store's reads run in place), so a thousand teammates fit
/// (docs/internals/store.md, "A thousand teammates").
const BLOCKING_THREADS: usize = 16;

/// The runtime every process that runs agents (a lead, a teammate process) runs them on.
pub fn agent_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Store calls and group-commit waits run on the blocking pool: with a thousand
        // teammates an unbounded pool grows to hundreds of threads, each with its stack.
        .max_blocking_threads(BLOCKING_THREADS)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Everything a run needs besides the agent itself.
pub struct RunContext {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// `<workspace>/.troupe`.
    pub troupe_dir: PathBuf,
    /// Session id of the lead's conversation.
    pub session_id: String,
    /// Resolved model settings.
    pub model: ModelConfig,
}

/// Resolves the workspace root from `--cwd` or the current directory.
pub fn workspace_root(args: &AgentArgs) -> Result<PathBuf> {
    let dir = crate::workspace::root(args.cwd.as_deref())?;
    if args.cwd.is_none() {
        return Ok(dir); // found from the canonical current directory: canonical already
    }
    dir.canonicalize().with_context(|| {
        format!(
            "workspace {} does not exist or is not accessible",
            dir.display()
        )
    })
}

/// The permission flags of a lead's command line, put on top of the settings' `permissions`:
/// `--allowedTools`, `--disallowedTools`, and `--permission-mode` winning over `defaultMode`.
fn permission_flags(args: &RunArgs) -> PermissionFlags {
    let split = |lists: &[String]| -> Vec<String> {
        lists.iter().flat_map(|s| split_rule_list(s)).collect()
    };
    let mode = match args.contract.dangerously_skip_permissions {
        true => Some("bypassPermissions".to_string()),
        false => args.agent.permission_mode.clone(),
    };
    if mode.as_deref() == Some("auto") {
        eprintln!("troupe: note: --permission-mode auto has no classifier model here; it decides as acceptEdits");
    }
    PermissionFlags {
        mode,
        allow: split(&args.allowed_tools),
        ask: Vec::new(),
        deny: split(&args.disallowed_tools),
    }
}

/// What troupe chose when the environment names both providers and `--provider` does not.
pub fn provider_note(args: &AgentArgs) -> Option<String> {
    let provider = args
        .provider
        .as_deref()
        .and_then(|p| p.parse::<Provider>().ok());
    let env = |key: &str| troupe_tools::child_env::var(key);
    troupe_model::ambiguity_note(provider, &env)
}

/// The lead's session: a resumed or continued one (copied to a new id with
/// `--fork-session`), `--session-id`'s, or a new one.
fn session_id(args: &RunArgs, troupe_dir: &Path) -> Result<String> {
    let resumed = match (&args.resume, args.continue_latest) {
        (Some(id), _) if id.is_empty() => Some(crate::commands::sessions::pick(troupe_dir)?),
        (Some(id), _) => Some(find_session(troupe_dir, id)?),
        (None, true) => Some(latest_session(troupe_dir)?),
        (None, false) => None,
    };
    let fresh = match &args.contract.session_id {
        Some(given) => {
            let id = uuid::Uuid::parse_str(given)
                .map_err(|e| anyhow::anyhow!("--session-id {given}: not a UUID ({e})"))?
                .to_string();
            if session_path(troupe_dir, &id).exists() {
                bail!(
                    "--session-id {id}: that session already exists; resume it with --resume {id}"
                );
            }
            id
        }
        None => new_session_id(),
    };
    match resumed {
        Some(old) if args.contract.fork_session => {
            let (from, to) = (
                session_path(troupe_dir, &old),
                session_path(troupe_dir, &fresh),
            );
            std::fs::copy(&from, &to).with_context(|| {
                format!(
                    "forking session {old}: copying {} to {}",
                    from.display(),
                    to.display()
                )
            })?;
            Ok(fresh)
        }
        Some(old) => {
            if args.contract.session_id.is_some() {
                bail!("--session-id names a new session; with --resume or --continue add --fork-session");
            }
            Ok(old)
        }
        None if args.contract.fork_session => {
            bail!("--fork-session needs --resume or --continue")
        }
        None => Ok(fresh),
    }
}

/// The identity part of the system prompt: `--system-prompt`, else `--system-prompt-file`.
fn system_prompt(args: &RunArgs) -> Result<Option<String>> {
    if let Some(text) = &args.system_prompt {
        return Ok(Some(text.clone()));
    }
    match &args.contract.system_prompt_file {
        Some(path) => std::fs::read_to_string(path)
            .map(Some)
            .with_context(|| format!("--system-prompt-file {}", path.display())),
        None => Ok(None),
    }
}

/// Takes the lead's lease on its team, or explains who already leads it.
async fn lead_lease(team: &Team) -> Result<Lease> {
    match team.shared().store.acquire_lease(LEAD).await {
        Ok(lease) => Ok(lease),
        Err(StoreError::LeaseHeld { holder, place, .. }) => {
            let who = holder.map_or_else(|| "it is just starting".to_string(), |h| h.to_string());
            bail!(
                "another lead is already running on team '{}' ({who}; it holds {}). Two leads on one team would race on its mail and roster: stop that one first, or start this one with another --team",
                team.name(),
                place
            )
        }
        Err(e) => Err(e).context("taking the lead's lease"),
    }
}

/// A lead ready to run: its agent, its team, and the runtime they run on.
pub struct Lead {
    /// The lead's lease on its team: held for the life of the process, so a second lead on
    /// the same team is refused.
    pub lease: Lease,
    /// The lead agent.
    pub agent: Agent,
    /// Paths, session and model.
    pub run: RunContext,
    /// Everything around the agent that front ends read.
    pub crew: Crew,
    /// The async runtime.
    pub runtime: tokio::runtime::Runtime,
    /// `--no-session-persistence`: the folder holding the transcript, removed with the lead.
    pub _ephemeral: Option<tempfile::TempDir>,
}

/// What surrounds the lead agent: its run, its team and what its tools share. Front ends
/// hold it while the session driver holds the agent.
pub struct Crew {
    /// The lead's team.
    pub team: Team,
    /// The lead's `task` tool, which adds up its subagents' usage.
    pub subagents: Arc<troupe_catalog::subagent::SubagentExtension>,
    /// The MCP servers every agent of this process shares.
    pub mcp: Arc<McpManager>,
    /// The project's and the user's skills.
    pub skills: Arc<SkillsExtension>,
    /// The custom slash commands and the output style.
    pub custom: Arc<crate::slash::Custom>,
}

impl Lead {
    /// Ends a lead whose run is over (its session ended and the result printed),
    /// just before the process exits: everything is dropped in the usual order, but the
    /// runtime is shut down without waiting for its threads to wind down (joining
    /// them cost the exit path ~0.5 ms). Nothing is left running on it by then — the session
    /// ended, teammates stopped, MCP servers and tool processes ended — and the process exit
    /// that follows ends those threads anyway.
    pub fn close(self) {
        let Lead {
            lease,
            agent,
            run,
            crew,
            runtime,
            _ephemeral,
        } = self;
        let Crew {
            team,
            subagents,
            mcp,
            skills,
            custom,
        } = crew;
        drop((lease, agent, run, team));
        drop((subagents, mcp, skills, custom, _ephemeral));
        runtime.shutdown_background();
    }
}

/// Builds the lead: agent with team tools and inbox, session transcript, team (teammates
/// respawned when continuing a session).
pub fn lead(
    args: &RunArgs,
    approver: Arc<dyn Approver>,
    notices: NoticeSink,
    asking: crate::trust::Asking,
) -> Result<Lead> {
    let workspace = workspace_root(&args.agent)?;
    crate::workspace::announce_troupe_dir(&workspace);
    let notes = args.contract.notes().into_iter().chain(args.sdk.notes());
    for note in notes.chain(args.claude.notes()) {
        eprintln!("troupe: note: {note}");
    }
    let reasoning = args
        .sdk
        .reasoning(args.contract.max_thinking_tokens, |key| {
            std::env::var(key).ok().filter(|v| !v.is_empty())
        })?;
    // What the run is resolved from; each teammate process gets the very same value.
    let sources = Sources::of_command_line(
        &args.agent,
        args.contract.setting_sources.as_deref(),
        args.sdk.agents.as_deref(),
    )
    .with_plugin_dirs(&args.sdk.plugin_dir, &args.sdk.plugin_dir_no_mcp)
    .with_tools(args.contract.tools.as_deref());
    let run = crate::compose::resolve(crate::compose::Inputs {
        workspace,
        sources: &sources,
        model: &ModelChoice::of(&args.agent),
        permissions: permission_flags(args),
        reasoning,
        asking,
        report: crate::subagents::Report::Warn,
    })?;
    // Before anything starts: an unknown name ends the run here.
    // `--agent`, else the settings' `agent` (Claude Code's key for the same).
    let setting = run.settings.other.get("agent").and_then(|v| v.as_str());
    let definition =
        crate::lead_agent::chosen(&run.agents, args.sdk.agent.as_deref().or(setting))?.cloned();
    if let Some(note) = provider_note(&args.agent) {
        eprintln!("troupe: note: {note}");
    }
    if args.max_turns == Some(0) {
        bail!("--max-turns must be at least 1");
    }
    let (workspace, troupe_dir) = (run.workspace.clone(), run.troupe_dir.clone());
    let settings = run.settings.clone();
    let session_id = session_id(args, &troupe_dir)?;
    crate::telemetry::start(run.telemetry.as_ref(), &session_id);
    if args.contract.include_hook_events {
        match args.output_format {
            crate::args::OutputFormat::StreamJson => crate::hook_events::stream(&session_id),
            _ => eprintln!("troupe: note: --include-hook-events applies to --output-format stream-json; hook runs are not shown"),
        }
    }
    // Without --team, the workspace's team (one board per project), or a team of its own
    // while another lead runs there.
    let team_name = args
        .team
        .clone()
        .unwrap_or_else(|| crate::team_pick::for_lead(&run.store, &troupe_dir, &session_id));
    let mode_name = args
        .teammate_mode
        .clone()
        .or_else(|| settings.teammate_mode.clone())
        .unwrap_or_else(|| "in-process".into());
    let teammate_mode: TeammateMode = mode_name
        .parse()
        .map_err(|e: String| anyhow::anyhow!("teammate mode: {e}"))?;
    let answerer: Answerer = args
        .teammate_permissions
        .clone()
        .or_else(|| settings.teammate_permissions.clone())
        // At the REPL the person answers teammates' questions; headless, the lead model.
        .unwrap_or_else(|| match asking {
            crate::trust::Asking::Person => "user".into(),
            crate::trust::Asking::Script => "lead".into(),
        })
        .parse()
        .map_err(|e: String| anyhow::anyhow!("teammate permissions: {e}"))?;
    // The lead's runtime, from the start: its store is opened and its lease taken on it.
    let runtime = agent_runtime()?;
    // The model's connection is opened while the lead is built: the first request finds it
    // ready instead of waiting for its handshakes.
    let client = run.client.clone();
    runtime.spawn(async move { client.preconnect().await });
    let store = runtime
        .block_on(crate::store::open(&run.store, &troupe_dir, &team_name))
        .with_context(|| {
            format!(
                "opening team '{}' ({})",
                team_name,
                run.store.describe(&troupe_dir)
            )
        })?;
    let (scheduler, cron) = crate::cron::scheduler(&troupe_dir, &team_name);
    let mut custom = crate::slash::Custom::load(
        &workspace,
        run.home.as_deref(),
        args.contract.setting_sources.as_deref(),
        &settings,
    )?
    .with_commands(run.plugin_and_skill_commands());
    if args.claude.disable_slash_commands {
        custom.commands = Default::default();
    }
    let custom = Arc::new(custom);
    let agents = run.agents.clone();
    let team = runtime.block_on(run.open_team(
        store,
        crate::compose::TeamSide {
            name: team_name.clone(),
            mode: teammate_mode,
            process_options: sources.to_value(),
            cron,
            notices,
        },
    ))?;
    let recipe = team.shared().config.recipe.clone();
    // Before anything that writes the session or starts teammates: two leads on one team would
    // race on its mailboxes, roster and requests.
    let lease = runtime.block_on(lead_lease(&team))?;
    if answerer == Answerer::User {
        // The approver that asks the person for the lead's own calls answers for teammates too.
        team.shared().protocols.answer_with(approver.clone());
    }
    let ephemeral = match args.sdk.no_session_persistence {
        true => Some(tempfile::tempdir().context("creating the session's temporary folder")?),
        false => None,
    };
    let path = match &ephemeral {
        Some(dir) => dir.path().join(format!("{session_id}.jsonl")),
        None => session_path(&troupe_dir, &session_id),
    };
    // `/rewind` is the REPL's: a headless run keeps no checkpoints.
    let files = settings.other.get("fileCheckpointingEnabled") != Some(&false.into());
    let checkpoints = (asking == crate::trust::Asking::Person).then(|| {
        // The lead's tools move to a task's worktree while it owns one: so do its checkpoints.
        let source =
            troupe_team::worktree::bind::WorktreeSource::new(team.shared().clone(), LEAD, None);
        let source: Arc<dyn troupe_agent::WorkspaceSource> = Arc::new(source);
        Arc::new(crate::checkpoint::CheckpointExtension::new(
            files,
            Some(source),
        ))
    });
    let subagents = crate::subagents::extension(
        agents,
        crate::subagents::Factory {
            recipe: recipe.clone(),
            approver: approver.clone(),
            checkpoints: checkpoints
                .as_ref()
                .map(|c| Arc::new(c.for_subagents()) as Arc<dyn troupe_agent::Extension>),
        },
    );
    let place = Place::Root {
        dir: workspace.clone(),
        start: Some(crate::repl_input::start_folder(&workspace)),
    };
    let mut role = Role::new(AgentKind::Main, LEAD, place)
        .approver(approver)
        .max_rounds(args.max_turns)
        .extension(subagents.clone())
        .extension(Arc::new(LeadExtension::new(team.clone())))
        .transcript(&path);
    if let Some(checkpoints) = checkpoints {
        role = role.extension(checkpoints);
    }
    match system_prompt(args)? {
        Some(identity) => role = role.identity(identity),
        None if custom.drops_coding_identity() => {
            role = role.identity(troupe_catalog::output_styles::STYLED_IDENTITY)
        }
        None => {}
    }
    if let Some(style) = custom.style_extension() {
        role = role.extension(style);
    }
    if let Some(definition) = &definition {
        role = crate::lead_agent::apply(role, definition, args.agent.model.is_some());
    }
    if let Some(text) = &args.append_system_prompt {
        // Registered last, so it ends the prompt.
        role = role.extension(Arc::new(AppendedPrompt(text.clone())));
    }
    if let Some(text) = args.claude.appended_prompt()? {
        role = role.extension(Arc::new(AppendedPrompt(text)));
    }
    let agent = recipe
        .build(role)
        .with_context(|| format!("opening session {}", path.display()))?;
    let (mcp, skills, model) = (run.mcp, run.skills, run.model);
    // In the background; a script (`-p`, the SDK) waits for them before its first model call
    // (`mcp::wait_for_first_call`), the REPL does not.
    mcp.start(runtime.handle());
    // Jobs that came due while nothing ran are in the inbox before the first turn; then the
    // scheduler watches the cron file for as long as this lead runs.
    scheduler.fire_now();
    runtime.spawn(scheduler.run());
    if args.continue_latest || args.resume.is_some() {
        let resumed = runtime.block_on(team.resume_members())?;
        if !resumed.is_empty() {
            tracing::info!(teammates = ?resumed, "respawned teammates");
        }
    }
    Ok(Lead {
        lease,
        agent,
        run: RunContext {
            workspace,
            troupe_dir,
            session_id,
            model,
        },
        crew: Crew {
            team,
            subagents,
            mcp,
            skills,
            custom,
        },
        runtime,
        _ephemeral: ephemeral,
    })
}

/// `--append-system-prompt`: one more section at the end of the lead's system prompt.
struct AppendedPrompt(String);

impl troupe_agent::Extension for AppendedPrompt {
    fn name(&self) -> &str {
        "append-system-prompt"
    }
    fn agent_prompt_sections(&self, _cx: &troupe_agent::ExtensionContext<'_>) -> Vec<String> {
        vec![self.0.clone()]
    }
}
