//! Turns command-line options into a ready lead agent: workspace, model, tools, permissions,
//! system prompt, and the session transcript (new, continued or resumed).

use crate::args::{AgentArgs, RunArgs};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use troupe_agent::permissions::{split_rule_list, PermissionMode, Policy, Rules};
use troupe_agent::prompt::{system_prompt, today, PromptContext};
use troupe_agent::session::{find_session, latest_session, new_session_id, session_path};
use troupe_agent::{Agent, AgentConfig, Approver};
use troupe_model::{ModelConfig, Provider};
use troupe_team::inbox::MailboxInbox;
use troupe_team::prompt::lead_section;
use troupe_team::protocols::{self, permission::Answerer};
use troupe_team::tools::register_lead_tools;
use troupe_team::{NoticeSink, Team, TeamConfig, TeammateMode, LEAD};
use troupe_tools::{Registry, ToolContext, Workspace};

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
    /// Permission mode in force.
    pub mode: PermissionMode,
}

/// The identity line of the lead agent.
const IDENTITY: &str = "You are troupe, a coding agent working in the user's repository. You have tools to read, search, edit files and run commands.";

/// Resolves the workspace root from `--cwd` or the current directory.
pub fn workspace_root(args: &AgentArgs) -> Result<PathBuf> {
    let dir = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    dir.canonicalize().with_context(|| {
        format!(
            "workspace {} does not exist or is not accessible",
            dir.display()
        )
    })
}

/// Parses `--permission-mode`.
pub fn permission_mode(args: &AgentArgs) -> Result<PermissionMode> {
    args.permission_mode.parse().map_err(|e| {
        anyhow::anyhow!(
            "--permission-mode {}: {e} (use default, acceptEdits, plan or bypassPermissions)",
            args.permission_mode
        )
    })
}

/// Builds the permission policy from the mode and rule flags.
pub fn policy(args: &RunArgs) -> Result<Policy> {
    let mode = permission_mode(&args.agent)?;
    let allow: Vec<String> = args
        .allowed_tools
        .iter()
        .flat_map(|s| split_rule_list(s))
        .collect();
    let deny: Vec<String> = args
        .disallowed_tools
        .iter()
        .flat_map(|s| split_rule_list(s))
        .collect();
    let rules = Rules::parse(&allow, &[], &deny)
        .context("invalid --allowedTools/--disallowedTools rule")?;
    Ok(Policy { mode, rules })
}

/// Resolves the model from flags and environment.
pub fn model_config(args: &AgentArgs) -> Result<ModelConfig> {
    let provider = match args.provider.as_deref() {
        None => None,
        Some(p) => Some(
            p.parse::<Provider>()
                .map_err(|e| anyhow::anyhow!("--provider {p}: {e}"))?,
        ),
    };
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    Ok(ModelConfig::resolve(provider, args.model.clone(), &env)?)
}

/// A lead ready to run: its agent, its team, and the runtime they run on.
pub struct Lead {
    /// The lead agent.
    pub agent: Agent,
    /// Paths, session and model.
    pub run: RunContext,
    /// The lead's team.
    pub team: Team,
    /// The async runtime.
    pub runtime: tokio::runtime::Runtime,
}

/// Builds the lead: agent with team tools and inbox, session transcript, team (teammates
/// respawned when continuing a session).
pub fn lead(args: &RunArgs, approver: Arc<dyn Approver>, notices: NoticeSink) -> Result<Lead> {
    let workspace = workspace_root(&args.agent)?;
    let troupe_dir = workspace.join(".troupe");
    let policy = policy(args)?;
    let mode = policy.mode;
    let model = model_config(&args.agent)?;
    let session_id = if let Some(id) = &args.resume {
        find_session(&troupe_dir, id)?
    } else if args.continue_latest {
        latest_session(&troupe_dir)?
    } else {
        new_session_id()
    };
    let guard = Workspace::new(&workspace)
        .with_context(|| format!("opening workspace {}", workspace.display()))?;
    let settings = crate::settings::load(&workspace)?;
    let sandbox = Arc::new(settings.sandbox.clone());
    let ctx = ToolContext::new(Arc::new(guard), "lead").with_sandbox_config(sandbox.clone());
    let mode_name = args
        .teammate_mode
        .clone()
        .or(settings.teammate_mode)
        .unwrap_or_else(|| "in-process".into());
    let teammate_mode: TeammateMode = mode_name
        .parse()
        .map_err(|e: String| anyhow::anyhow!("teammate mode: {e}"))?;
    let answerer: Answerer = args
        .teammate_permissions
        .clone()
        .or(settings.teammate_permissions)
        .unwrap_or_else(|| "lead".into())
        .parse()
        .map_err(|e: String| anyhow::anyhow!("teammate permissions: {e}"))?;
    let team = Team::open(
        TeamConfig {
            team: args.team.clone(),
            workspace: workspace.clone(),
            troupe_dir: troupe_dir.clone(),
            model: model.clone(),
            max_tokens: args.agent.max_tokens,
            policy: policy.clone(),
            mode: teammate_mode,
            exe: None,
            sandbox,
        },
        notices,
    )
    .with_context(|| format!("opening team '{}'", args.team))?;
    if answerer == Answerer::User {
        // The approver that asks the person for the lead's own calls answers for teammates too.
        team.shared().protocols.answer_with(approver.clone());
    }
    let mut tools = Registry::with_builtins();
    register_lead_tools(&team, &mut tools);
    let extra_prompt = [lead_section(&args.team), protocols::lead_section()];
    let config = AgentConfig {
        name: "lead".into(),
        model: model.model.clone(),
        max_tokens: args.agent.max_tokens,
        max_rounds: args.max_turns,
    };
    let tool_names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let date = today();
    let system = system_prompt(&PromptContext {
        identity: IDENTITY,
        workspace: &workspace,
        date: &date,
        tools: &tool_names,
        extra: &extra_prompt,
        home: home.as_deref(),
    });
    let mut agent = Agent::new(config, model.build(), system, tools, ctx, policy, approver);
    let path = session_path(&troupe_dir, &session_id);
    if args.max_turns == Some(0) {
        bail!("--max-turns must be at least 1");
    }
    agent
        .attach_transcript(&path)
        .with_context(|| format!("opening session {}", path.display()))?;
    agent.set_inbox(Arc::new(MailboxInbox::new(
        team.shared().store.clone(),
        LEAD,
    )));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if args.continue_latest || args.resume.is_some() {
        let _guard = runtime.enter();
        let resumed = team.resume_members()?;
        if !resumed.is_empty() {
            tracing::info!(teammates = ?resumed, "respawned teammates");
        }
    }
    Ok(Lead {
        agent,
        run: RunContext {
            workspace,
            troupe_dir,
            session_id,
            model,
            mode,
        },
        team,
        runtime,
    })
}
