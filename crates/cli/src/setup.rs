//! Turns command-line options into a ready lead agent: workspace, model, tools, permissions,
//! system prompt, and the session transcript (new, continued or resumed).

use crate::args::{AgentArgs, RunArgs};
use crate::mcp::McpExtension;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::permissions::{split_rule_list, Policy};
use troupe_agent::session::{find_session, latest_session, new_session_id, session_path};
use troupe_agent::{effective_policy, Agent, AgentBuilder, Approver, Extension, PermissionFlags};
use troupe_catalog::SkillsExtension;
use troupe_mcp::McpManager;
use troupe_model::{
    CacheTtl, Limited, Model, ModelConfig, PromptCache, Provider, DEFAULT_MAX_CONCURRENT_CALLS,
};
use troupe_settings::Settings;
use troupe_store::{Lease, StoreError};
use troupe_team::protocols::permission::Answerer;
use troupe_team::{LeadExtension, NoticeSink, Team, TeamConfig, TeammateMode, LEAD};
use troupe_tools::Workspace;

/// The lead runtime's blocking threads at most (tokio's default is 512).
const BLOCKING_THREADS: usize = 32;

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

/// The effective permission policy: the settings' `permissions` with `--allowedTools` and
/// `--disallowedTools` added, `--permission-mode` winning over `defaultMode`.
pub fn policy(args: &RunArgs, settings: &Settings) -> Result<Policy> {
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
    let flags = PermissionFlags {
        mode,
        allow: split(&args.allowed_tools),
        ask: Vec::new(),
        deny: split(&args.disallowed_tools),
    };
    effective_policy(&settings.permissions, &flags).context(
        "invalid permissions (use the modes default, acceptEdits, plan, bypassPermissions, dontAsk or auto)",
    )
}

/// Resolves the model from flags, settings (`model` when no `--model`) and environment.
pub fn model_config(args: &AgentArgs, settings: &Settings) -> Result<ModelConfig> {
    let provider = match args.provider.as_deref() {
        None => None,
        Some(p) => Some(
            p.parse::<Provider>()
                .map_err(|e| anyhow::anyhow!("--provider {p}: {e}"))?,
        ),
    };
    let env = |key: &str| troupe_tools::child_env::var(key).filter(|v| !v.is_empty());
    let model = args.model.clone().or_else(|| settings.model.clone());
    let mut config = ModelConfig::resolve(provider, model, &env)?;
    config.prompt_cache = prompt_cache(config.prompt_cache, settings)?;
    Ok(config)
}

/// Prompt caching as the environment left it, changed by the `promptCaching` setting: it may
/// turn caching off or set the entries' lifetime, never turn on what `DISABLE_PROMPT_CACHING`
/// turned off.
fn prompt_cache(from_env: PromptCache, settings: &Settings) -> Result<PromptCache> {
    let Some(setting) = &settings.prompt_caching else {
        return Ok(from_env);
    };
    let mut cache = from_env;
    if setting.enabled == Some(false) {
        cache.enabled = false;
    }
    if let Some(ttl) = &setting.ttl {
        cache.ttl = CacheTtl::parse(ttl).ok_or_else(|| {
            anyhow::anyhow!(
                "settings promptCaching.ttl: {ttl:?} is not a cache lifetime (use \"5m\" or \"1h\")"
            )
        })?;
    }
    crate::cost::set_cache_ttl(cache.ttl);
    Ok(cache)
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

/// The process's one model client, shared by the lead and every in-process teammate (one HTTP
/// connection pool), running at most `max_concurrent_model_calls` calls at once.
pub fn model_client(model: &ModelConfig, settings: &Settings) -> Arc<dyn Model> {
    let max = settings
        .max_concurrent_model_calls
        .unwrap_or(DEFAULT_MAX_CONCURRENT_CALLS);
    Arc::new(Limited::new(model.build(), max).with_shared_prefixes(model.prompt_cache))
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

/// `--tools`: the built-in tools to offer, in troupe's names; `None` for all of them.
pub fn only_tools(list: Option<&str>) -> Option<Vec<String>> {
    let list = list?.trim();
    if list == "default" {
        return None;
    }
    Some(
        split_rule_list(list)
            .iter()
            .map(|name| troupe_catalog::agents::troupe_tool_name(name))
            .collect(),
    )
}

/// Takes the lead's lease on its team, or explains who already leads it.
fn lead_lease(team: &Team) -> Result<Lease> {
    match team.shared().store.acquire_lease(LEAD) {
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

/// Keeps the `.troupe` directory troupe just made out of the user's `git status` (through the
/// repository's `info/exclude`, never the user's `.gitignore`); outside git there is nothing to do.
pub fn exclude_troupe_dir(workspace: &std::path::Path) {
    if crate::workspace::exclude_is_settled(workspace) {
        return;
    }
    if let Err(e) = troupe_team::worktree::ensure_troupe_excluded(workspace) {
        tracing::warn!(error = %e, "could not add .troupe/ to the repository's info/exclude");
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
    /// The lead's team.
    pub team: Team,
    /// The async runtime.
    pub runtime: tokio::runtime::Runtime,
    /// The lead's `task` tool, which adds up its subagents' usage.
    pub subagents: Arc<troupe_catalog::subagent::SubagentExtension>,
    /// The MCP servers every agent of this process shares.
    pub mcp: Arc<McpManager>,
    /// The project's and the user's skills.
    pub skills: Arc<SkillsExtension>,
    /// The custom slash commands and the output style.
    pub custom: Arc<crate::slash::Custom>,
    /// `--no-session-persistence`: the folder holding the transcript, removed with the lead.
    pub _ephemeral: Option<tempfile::TempDir>,
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
    let troupe_dir = workspace.join(".troupe");
    let mut loaded = crate::settings::load_sources(
        &workspace,
        args.agent.settings.as_deref(),
        args.contract.setting_sources.as_deref(),
    )?;
    for note in args.contract.notes().into_iter().chain(args.sdk.notes()) {
        eprintln!("troupe: note: {note}");
    }
    // Before anything the workspace defines runs or applies (its env included): what is left
    // of `loaded` is all the lead, its teammates and subagents are built from.
    let workspace_servers = crate::trust::apply(
        &workspace,
        &mut loaded,
        args.agent.mcp.strict_mcp_config,
        asking,
    )?;
    // Before the model is resolved (the env may name its endpoint).
    crate::settings::apply_env(&loaded.settings);
    crate::settings::apply_command_env(&loaded);
    crate::cost::set_pricing(&loaded.settings.pricing);
    let store_choice = crate::store::choose(args.agent.store.as_deref(), Some(&loaded.settings))?;
    // Teammate processes and the `troupe` commands its tools run find the team's store.
    troupe_tools::child_env::set_overlay([(
        crate::store::STORE_VAR.to_string(),
        store_choice.spec().to_string(),
    )]);
    let policy = policy(args, &loaded.settings)?;
    let mcp = crate::mcp::manager(
        &workspace,
        &loaded,
        &args.agent.mcp,
        &policy,
        workspace_servers,
    )?;
    let mcp_extension: Arc<dyn Extension> = Arc::new(McpExtension::new(mcp.clone()));
    let mut settings = loaded.settings;
    crate::settings::apply_flags(&mut settings, &args.agent);
    let settings = Arc::new(settings);
    let mode = policy.mode;
    let mut model = model_config(&args.agent, &settings)?;
    model.reasoning = args
        .sdk
        .reasoning(args.contract.max_thinking_tokens, |key| {
            std::env::var(key).ok().filter(|v| !v.is_empty())
        })?;
    if let Some(note) = provider_note(&args.agent) {
        eprintln!("troupe: note: {note}");
    }
    let client = model_client(&model, &settings);
    if args.max_turns == Some(0) {
        bail!("--max-turns must be at least 1");
    }
    let session_id = session_id(args, &troupe_dir)?;
    // Without --team, a team of its own: any number of sessions share the workspace.
    let team_name = args
        .team
        .clone()
        .unwrap_or_else(|| crate::team_pick::of_session(&session_id));
    let added_dirs = crate::settings::added_dirs(&args.agent, &settings, &workspace)?;
    let guard = Workspace::new(&workspace)
        .and_then(|ws| ws.with_added_dirs(&added_dirs))
        .map(|ws| ws.with_start(&crate::repl_input::start_folder(&workspace)))
        .with_context(|| format!("opening workspace {}", workspace.display()))?;
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
    let store = crate::store::open(&store_choice, &troupe_dir, &team_name).with_context(|| {
        format!(
            "opening team '{}' ({})",
            team_name,
            store_choice.describe(&troupe_dir)
        )
    })?;
    let hooks = crate::hooks::extension(&settings, &workspace, mode, store.clone())?;
    let (scheduler, cron) = crate::cron::scheduler(&troupe_dir, &team_name);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let skills = project_skills(&workspace, home.as_deref());
    let custom = Arc::new(crate::slash::Custom::load(
        &workspace,
        home.as_deref(),
        args.contract.setting_sources.as_deref(),
        &settings,
    )?);
    let mut agents =
        crate::subagents::definitions(&workspace, home.as_deref(), crate::subagents::Report::Warn);
    if let Some(json) = &args.sdk.agents {
        let mut defined = (*agents).clone();
        troupe_catalog::agents::add_json(&mut defined, json).map_err(anyhow::Error::msg)?;
        agents = Arc::new(defined);
    }
    // The setting sources decide every agent's memory files: the lead's, its teammates' and
    // its subagents'.
    let memory_sources = crate::settings::memory_sources(args.contract.setting_sources.as_deref());
    let team = Team::open(
        TeamConfig {
            team: team_name.clone(),
            workspace: workspace.clone(),
            troupe_dir: troupe_dir.clone(),
            client: client.clone(),
            model: model.clone(),
            max_tokens: args.agent.max_tokens,
            policy: policy.clone(),
            mode: teammate_mode,
            exe: None,
            settings: settings.clone(),
            extensions: vec![
                Arc::new(hooks.for_teammates(&team_name)),
                mcp_extension.clone(),
                cron.clone(),
                skills.clone(),
            ],
            agents: agents.clone(),
            mcp_servers: mcp.names().into_iter().map(str::to_string).collect(),
            home: home.clone(),
            added_dirs: added_dirs.clone(),
            memory_sources,
            process_options: crate::commands::teammate_launch::ProcessOptions::of_lead(
                &args.agent,
                args.contract.setting_sources.as_deref(),
                &added_dirs,
                store_choice.spec(),
            )
            .to_value(),
        },
        store,
        notices,
    )
    .with_context(|| format!("opening team '{team_name}'"))?;
    // Before anything that writes the session or starts teammates: two leads on one team would
    // race on its mailboxes, roster and requests.
    let lease = lead_lease(&team)?;
    exclude_troupe_dir(&workspace);
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
    let subagents = crate::subagents::extension(
        agents,
        crate::subagents::Factory {
            model: model.clone(),
            client: client.clone(),
            settings: settings.clone(),
            policy: policy.clone(),
            approver: approver.clone(),
            max_tokens: args.agent.max_tokens,
            home: home.clone(),
            memory_sources,
            extensions: vec![
                Arc::new(hooks.for_subagents()),
                mcp_extension.clone(),
                skills.clone(),
            ],
        },
    );
    let mut builder = AgentBuilder::new(LEAD, Arc::new(guard), client, model.model.clone());
    match system_prompt(args)? {
        Some(identity) => builder = builder.identity(identity),
        None if custom.drops_coding_identity() => {
            builder = builder.identity(troupe_catalog::output_styles::STYLED_IDENTITY)
        }
        None => {}
    }
    builder = builder.only_tools(only_tools(args.contract.tools.as_deref()));
    builder = builder.memory_sources(memory_sources);
    builder = builder
        .home(home)
        .extension(skills.clone())
        .extension(subagents.clone())
        .settings(settings)
        .policy(policy)
        .approver(approver)
        .max_tokens(args.agent.max_tokens)
        .max_rounds(args.max_turns)
        .extension(Arc::new(LeadExtension::new(team.clone())))
        .extension(Arc::new(hooks))
        .extension(mcp_extension)
        .extension(cron)
        .transcript(&path);
    if let Some(style) = custom.style_extension() {
        builder = builder.extension(style);
    }
    if let Some(text) = &args.append_system_prompt {
        // Registered last, so it ends the prompt.
        builder = builder.extension(Arc::new(AppendedPrompt(text.clone())));
    }
    let agent = builder
        .build()
        .with_context(|| format!("opening session {}", path.display()))?;
    let runtime = agent_runtime()?;
    // In the background; a script (`-p`, the SDK) waits for them before its first model call
    // (`mcp::wait_for_first_call`), the REPL does not.
    mcp.start(runtime.handle());
    // Jobs that came due while nothing ran are in the inbox before the first turn; then the
    // scheduler watches the cron file for as long as this lead runs.
    scheduler.fire_now();
    runtime.spawn(scheduler.run());
    if args.continue_latest || args.resume.is_some() {
        let _guard = runtime.enter();
        let resumed = team.resume_members()?;
        if !resumed.is_empty() {
            tracing::info!(teammates = ?resumed, "respawned teammates");
        }
    }
    Ok(Lead {
        lease,
        subagents,
        agent,
        run: RunContext {
            workspace,
            troupe_dir,
            session_id,
            model,
        },
        team,
        runtime,
        mcp,
        skills,
        custom,
        _ephemeral: ephemeral,
    })
}

/// The project's skills as an extension, warning on stderr about every `SKILL.md` that was
/// skipped (a malformed file is reported, never fatal).
pub fn project_skills(workspace: &Path, home: Option<&Path>) -> Arc<SkillsExtension> {
    let skills = troupe_catalog::skills::load(workspace, home);
    for skipped in &skills.skipped {
        eprintln!(
            "troupe: warning: skipped skill {}: {}",
            skipped.path.display(),
            skipped.why
        );
    }
    Arc::new(SkillsExtension::new(skills))
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
