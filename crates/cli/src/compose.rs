//! The composition root: what every agent of a run is made from, resolved once — the settings
//! files `--setting-sources` selects and `--settings`, the workspace's trust, the environment,
//! the flags, the permission policy, the model and its reasoning, the MCP servers, the skills —
//! into one [`Resolved`], and from it the run's one [`Recipe`], which builds the lead, every
//! teammate and every subagent ([`Recipe::build`]). A lead resolves it from its command line's
//! [`Sources`]; a teammate process from the same `Sources`, which its lead wrote into its launch
//! (`commands/teammate_launch.rs`), through the same [`resolve`].

use crate::mcp::McpExtension;
use crate::subagents::Report;
use crate::trust::Asking;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::memory::MemorySources;
use troupe_agent::permissions::Policy;
use troupe_agent::{effective_policy, AgentKind, Extension, PermissionFlags, PolicyError, Recipe};
use troupe_catalog::agents::Definitions;
use troupe_catalog::SkillsExtension;
use troupe_hooks::HooksExtension;
use troupe_mcp::McpManager;
use troupe_model::{
    CacheTtl, Limited, Model, ModelConfig, PromptCache, Provider, Reasoning,
    DEFAULT_MAX_CONCURRENT_CALLS,
};
use troupe_settings::Settings;

mod model_defaults;
mod sources;
mod team;
pub mod tool_list;

pub use sources::{ModelChoice, Sources};
pub use team::TeamSide;

/// What a run is resolved from: the workspace, the [`Sources`] and [`ModelChoice`] a command
/// line gave (a lead's, or the launch a lead wrote for its teammate process), the permission
/// flags and the reasoning.
pub struct Inputs<'a> {
    /// The canonical workspace root.
    pub workspace: PathBuf,
    /// The settings, MCP, store, directory and definition options.
    pub sources: &'a Sources,
    /// The model and output limit.
    pub model: &'a ModelChoice,
    /// The permission flags (mode and rules) on top of the settings' `permissions`.
    pub permissions: PermissionFlags,
    /// Extended thinking and effort.
    pub reasoning: Reasoning,
    /// Who decides about an untrusted workspace.
    pub asking: Asking,
    /// Whether skipped definition and skill files are reported (the lead's) or not (a teammate
    /// process's: its lead reported them).
    pub report: Report,
}

/// Everything the agents of a run are made from, resolved once.
pub struct Resolved {
    /// The canonical workspace root.
    pub workspace: PathBuf,
    /// `<workspace>/.troupe`.
    pub troupe_dir: PathBuf,
    /// The effective settings, flags that override settings applied.
    pub settings: Arc<Settings>,
    /// The permission policy.
    pub policy: Policy,
    /// The model, its reasoning included.
    pub model: ModelConfig,
    /// The process's one model client.
    pub client: Arc<dyn Model>,
    /// Output token limit per model call.
    pub max_tokens: u32,
    /// Directories every agent's tools may use besides the workspace, canonical.
    pub added_dirs: Vec<PathBuf>,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// Which memory files go into every agent's prompt.
    pub memory_sources: MemorySources,
    /// The MCP servers every agent of this process shares.
    pub mcp: Arc<McpManager>,
    /// The project's and the user's skills.
    pub skills: Arc<SkillsExtension>,
    /// The agent definitions (`task`, `spawn_teammate{agent}`): the workspace's, the user's and
    /// `--agents`.
    pub agents: Arc<Definitions>,
    /// The team's store.
    pub store: crate::store::StoreChoice,
    /// The run's plugins (`--plugin-dir`, `enabledPlugins`).
    pub plugins: Arc<Vec<troupe_plugins::Plugin>>,
    /// `--tools`: the tools every agent may be offered, in troupe's names (`None`: all).
    pub tools: Option<Vec<String>>,
    /// The telemetry the person's environment and settings ask for.
    pub telemetry: Option<crate::telemetry::Config>,
}

/// Resolves a run: settings (as the sources select them, `--settings` on top), the workspace's
/// trust, the settings' environment, the store, the policy, the MCP servers, the model.
pub fn resolve(inputs: Inputs<'_>) -> Result<Resolved> {
    let Inputs {
        workspace,
        sources,
        model: choice,
        permissions,
        reasoning,
        asking,
        report,
    } = inputs;
    let setting_sources = sources.setting_sources.as_deref();
    let mcp_flags = sources.mcp_flags();
    let mut loaded =
        crate::settings::load_sources(&workspace, sources.settings.as_deref(), setting_sources)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // A plugin's hooks and servers join the settings before trust: the workspace's plugins are
    // decided on with the workspace's own definitions.
    let plugins = crate::plugins::load(
        &workspace,
        home.as_deref(),
        &sources.plugin_dirs,
        &sources.plugin_dirs_no_mcp,
        &loaded,
        report,
    );
    crate::plugins::add_layers(&plugins, &mut loaded);
    // Before anything the workspace defines runs or applies (its env included): what is left
    // of `loaded` is all every agent of the run is built from.
    let workspace_servers =
        crate::trust::apply(&workspace, &mut loaded, mcp_flags.strict_mcp_config, asking)?;
    // Before the model is resolved (the env may name its endpoint).
    crate::settings::apply_env(&loaded.settings);
    crate::settings::apply_command_env(&loaded);
    crate::cost::set_pricing(&loaded.settings.pricing);
    let store = crate::store::choose(sources.store.as_deref(), Some(&loaded.settings))?;
    // Teammate processes and the `troupe` commands the tools run find the team's store.
    // Without its credentials: those are held in memory (teammates get them on their launch
    // pipe), and a tool call's `troupe` command has no business writing to the store.
    if let crate::store::StoreChoice::Nats(_, url) = &store {
        crate::nats::hold_credentials(url);
    }
    troupe_tools::child_env::set_overlay([(
        crate::store::STORE_VAR.to_string(),
        crate::nats::without_credentials(store.spec()),
    )]);
    let policy =
        effective_policy(&loaded.settings.permissions, &permissions).map_err(|e| match e {
            PolicyError::BypassDisabled => anyhow::Error::new(e),
            e => anyhow::Error::new(e).context(
                "invalid permissions (use the modes default, acceptEdits, plan, bypassPermissions, dontAsk or auto)",
            ),
        })?;
    let (mcp, unconfigured) =
        crate::mcp::manager(&workspace, &loaded, &mcp_flags, &policy, workspace_servers)?;
    let mut warnings = crate::settings_warnings::warnings(&loaded);
    warnings.extend(unconfigured);
    let (telemetry, telemetry_warnings) = crate::telemetry::config(&loaded);
    warnings.extend(telemetry_warnings);
    let mut settings = loaded.settings;
    crate::settings::apply_flags(&mut settings, sources.context_window);
    let openai = choice
        .provider
        .as_deref()
        .is_some_and(|p| p.parse::<Provider>().is_ok_and(|p| p == Provider::OpenAi));
    let helper_key = crate::api_key_helper::apply(&settings, &workspace, openai)?;
    let mut model = model_config(choice, &settings)?;
    if helper_key && model.provider == Provider::Anthropic {
        // As Claude Code sends a helper's key.
        model.auth = troupe_model::Auth::Both;
    }
    model.reasoning = model_defaults::thinking(reasoning, &settings);
    let env = |key: &str| troupe_tools::child_env::var(key);
    let max_tokens = model_defaults::max_output_tokens(choice.max_tokens, &env, &mut warnings);
    if report == Report::Warn {
        // Once, by the lead: on stderr in `-p`, above the REPL's first prompt.
        for warning in &warnings {
            eprintln!("troupe: warning: {warning}");
        }
    }
    let client = model_client(&model, &settings);
    let added_dirs = crate::settings::added_dirs(&sources.add_dirs, &settings, &workspace)?;
    let skills = project_skills(&workspace, home.as_deref(), &plugins, report);
    let agents = definitions(
        &workspace,
        home.as_deref(),
        sources.agents.as_deref(),
        &plugins,
        report,
    )?;
    Ok(Resolved {
        troupe_dir: workspace.join(".troupe"),
        workspace,
        settings: Arc::new(settings),
        policy,
        model,
        client,
        max_tokens,
        added_dirs,
        home,
        // The setting sources decide every agent's memory files too.
        memory_sources: crate::settings::memory_sources(setting_sources),
        mcp,
        skills,
        agents,
        store,
        plugins: Arc::new(plugins),
        tools: sources.tools.clone(),
        telemetry,
    })
}

impl Resolved {
    /// The run's recipe, the workspace's `hooks` and the team's scheduled prompts (`cron`)
    /// among the extensions: every agent gets the hooks, MCP servers and skills (a subagent's
    /// hooks end in `SubagentStop`, a teammate's know its team), the lead and teammates the
    /// scheduling tools.
    pub fn recipe(&self, hooks: HooksExtension, cron: Arc<dyn Extension>) -> Recipe {
        let mcp: Arc<dyn Extension> = Arc::new(McpExtension::new(self.mcp.clone()));
        let skills: Arc<dyn Extension> = self.skills.clone();
        let shared = move |kind: &AgentKind| -> Vec<Arc<dyn Extension>> {
            let hooks: Arc<dyn Extension> = match kind {
                AgentKind::Main => Arc::new(hooks.clone()),
                AgentKind::Member { group } => Arc::new(hooks.for_teammates(group.clone())),
                AgentKind::Subagent => Arc::new(hooks.for_subagents()),
            };
            match kind {
                AgentKind::Subagent => vec![hooks, mcp.clone(), skills.clone()],
                _ => vec![hooks, mcp.clone(), cron.clone(), skills.clone()],
            }
        };
        let mut recipe = Recipe::new(self.model.clone(), self.client.clone());
        recipe.settings = self.settings.clone();
        recipe.policy = self.policy.clone();
        recipe.max_tokens = self.max_tokens;
        recipe.home = self.home.clone();
        recipe.memory_sources = self.memory_sources;
        recipe.added_dirs = self.added_dirs.clone();
        recipe.shared = Arc::new(shared);
        recipe.tool_filter = tool_list::filter(self.tools.as_deref());
        recipe.summarizer = Some(crate::hook_services::summarizer(&self.model, &self.client));
        recipe
    }

    /// The slash commands the run adds to the project's: every plugin's (`/plugin:command`),
    /// then every skill's (`/skill-name`).
    pub fn plugin_and_skill_commands(&self) -> Vec<troupe_catalog::commands::SlashCommand> {
        let plugin = self
            .plugins
            .iter()
            .flat_map(|p| p.commands.commands.iter().cloned());
        let skills = self
            .skills
            .skills()
            .iter()
            .map(troupe_catalog::commands::of_skill);
        plugin.chain(skills).collect()
    }
}

/// Resolves the model from flags, settings (`model` when no `--model`) and environment.
fn model_config(choice: &ModelChoice, settings: &Settings) -> Result<ModelConfig> {
    let provider = match choice.provider.as_deref() {
        None => None,
        Some(p) => Some(
            p.parse::<Provider>()
                .map_err(|e| anyhow::anyhow!("--provider {p}: {e}"))?,
        ),
    };
    let env = |key: &str| troupe_tools::child_env::var(key).filter(|v| !v.is_empty());
    let model = choice.model.clone().or_else(|| settings.model.clone());
    let mut config = ModelConfig::resolve(provider, model, &env)?;
    config.prompt_cache = prompt_cache(config.prompt_cache, settings)?;
    served_alias(&mut config, &env)?;
    Ok(config)
}

/// On an OpenAI-compatible server, a Claude Code alias (`--model sonnet`) becomes the name the
/// server lists for it, or an error naming the alias and the server's models. The list is asked
/// for on a thread of its own, so this works inside and outside a runtime alike.
fn served_alias(
    config: &mut ModelConfig,
    env: &(impl Fn(&str) -> Option<String> + Sync),
) -> Result<()> {
    if config.provider != Provider::OpenAi || troupe_model::alias::alias_of(&config.model).is_none()
    {
        return Ok(());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting a runtime to list the server's models")?;
                runtime
                    .block_on(troupe_model::served::check_alias(config, env))
                    .map_err(anyhow::Error::msg)
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("listing the server's models failed")))
    })
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

/// The process's one model client, shared by every agent it runs (one HTTP connection pool),
/// running at most `max_concurrent_model_calls` calls at once.
pub fn model_client(model: &ModelConfig, settings: &Settings) -> Arc<dyn Model> {
    let max = settings
        .max_concurrent_model_calls
        .unwrap_or(DEFAULT_MAX_CONCURRENT_CALLS);
    Arc::new(Limited::new(model.build(), max).with_shared_prefixes(model.prompt_cache))
}

/// The project's, the user's and the plugins' skills as an extension, warning on stderr about
/// every `SKILL.md` that was skipped when `report` says so (a malformed file is reported, never
/// fatal).
fn project_skills(
    workspace: &Path,
    home: Option<&Path>,
    plugins: &[troupe_plugins::Plugin],
    report: Report,
) -> Arc<SkillsExtension> {
    let mut skills = troupe_catalog::skills::load(workspace, home);
    for plugin in plugins {
        skills.skills.extend(plugin.skills.skills.iter().cloned());
    }
    for skipped in skills.skipped.iter().filter(|_| report == Report::Warn) {
        eprintln!(
            "troupe: warning: skipped skill {}: {}",
            skipped.path.display(),
            skipped.why
        );
    }
    Arc::new(SkillsExtension::new(skills))
}

/// The workspace's, the user's and the plugins' agent definitions with those given as JSON
/// (`--agents`) added; skipped files reported on stderr when `report` says so.
fn definitions(
    workspace: &Path,
    home: Option<&Path>,
    json: Option<&str>,
    plugins: &[troupe_plugins::Plugin],
    report: Report,
) -> Result<Arc<Definitions>> {
    let mut definitions = crate::subagents::definitions(workspace, home, report);
    if plugins.iter().any(|p| !p.agents.agents.is_empty()) {
        let mut defined = (*definitions).clone();
        for plugin in plugins {
            defined.agents.extend(plugin.agents.agents.iter().cloned());
        }
        definitions = Arc::new(defined);
    }
    if let Some(json) = json {
        let mut defined = (*definitions).clone();
        troupe_catalog::agents::add_json(&mut defined, json).map_err(anyhow::Error::msg)?;
        definitions = Arc::new(defined);
    }
    Ok(definitions)
}
