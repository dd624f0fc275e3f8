//! [`AgentBuilder`]: how an agent is made from the effective settings, the permission policy, a
//! tool set, an identity and the extensions that add tools, prompt sections, mail and gates.
//! The system prompt is assembled here, once. The agents of a run are made through
//! [`crate::recipe::Recipe::build`], which fills the builder from the run's one resolved
//! configuration.

use crate::effective_policy::{effective_policy, PermissionFlags, PolicyError};
use crate::extension::{Approver, Extension, ExtensionContext, RefuseApprover};
use crate::permissions::Policy;
use crate::permissions::ProtectedPaths;
use crate::prompt::{system_prompt, today, PromptContext};
use crate::tool_filter::{FilteredSource, ToolFilter};
use crate::transcript::TranscriptError;
use crate::turn::{Agent, AgentConfig};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_model::Model;
use troupe_settings::Settings;
use troupe_tools::sandbox::Network;
use troupe_tools::{Registry, SandboxConfig, SandboxMode, ToolContext, Workspace};

/// The identity line of an agent not given another (the lead's).
pub const DEFAULT_IDENTITY: &str = "You are troupe, a coding agent working in the user's repository. You have tools to read, search, edit files and run commands.";

/// The output token limit per model call when none is given.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Why an agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The permission policy derived from the settings is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The transcript could not be opened or repaired.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// The directory its tools work in (or one added to it) cannot be opened.
    #[error("opening workspace {}: {source}", root.display())]
    Workspace {
        /// The directory.
        root: PathBuf,
        /// Why it cannot be opened.
        source: troupe_tools::GuardError,
    },
}

/// Collects everything an agent is made of; [`AgentBuilder::build`] makes it.
pub struct AgentBuilder {
    name: String,
    workspace: Arc<Workspace>,
    model: Arc<dyn Model>,
    model_name: String,
    identity: String,
    home: Option<PathBuf>,
    date: Option<String>,
    max_tokens: u32,
    max_rounds: Option<u32>,
    settings: Arc<Settings>,
    policy: Option<Policy>,
    approver: Arc<dyn Approver>,
    tools: Registry,
    extensions: Vec<Arc<dyn Extension>>,
    transcript: Option<PathBuf>,
    transcript_mirror: Option<Arc<dyn crate::transcript_mirror::TranscriptMirror>>,
    stop: Arc<AtomicBool>,
    sandbox: Option<SandboxConfig>,
    only_tools: Option<Vec<String>>,
    tool_filter: Option<ToolFilter>,
    context_window: Option<u64>,
    memory_sources: crate::memory::MemorySources,
    summarizer: Option<Arc<dyn troupe_tools::Summarizer>>,
}

/// The built-in tools that come from extensions rather than the base registry; `--tools`
/// restricts them too.
const BUILT_IN_EXTENSION_TOOLS: [&str; 6] = [
    crate::todo::TOOL_NAME,
    crate::compact::tool::TOOL_NAME,
    "task",
    crate::session_tools::ASK_USER_QUESTION,
    crate::session_tools::ENTER_PLAN_MODE,
    crate::session_tools::EXIT_PLAN_MODE,
];

impl AgentBuilder {
    /// Starts an agent named `name` working in `workspace` on `model` (sent as `model_name`),
    /// with the built-in tools, default settings, a policy from those settings and an approver
    /// that refuses what the policy would ask about.
    pub fn new(
        name: impl Into<String>,
        workspace: Arc<Workspace>,
        model: Arc<dyn Model>,
        model_name: impl Into<String>,
    ) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            workspace,
            model,
            model_name: model_name.into(),
            identity: DEFAULT_IDENTITY.to_string(),
            home: None,
            date: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            max_rounds: None,
            settings: Arc::new(Settings::default()),
            policy: None,
            approver: Arc::new(RefuseApprover),
            tools: Registry::with_builtins(),
            extensions: Vec::new(),
            transcript: None,
            transcript_mirror: None,
            stop: Arc::new(AtomicBool::new(false)),
            sandbox: None,
            only_tools: None,
            tool_filter: None,
            context_window: None,
            memory_sources: crate::memory::MemorySources::default(),
            summarizer: None,
        }
    }

    /// What answers web_fetch's prompts (the run's small, fast model); none: web_fetch returns
    /// the page itself.
    pub fn summarizer(mut self, summarizer: Option<Arc<dyn troupe_tools::Summarizer>>) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// The first line of the system prompt: who the agent is.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// The user's home directory, for the user's memory files (none: no user memory).
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Which memory files go into the prompt (default: all of them).
    pub fn memory_sources(mut self, sources: crate::memory::MemorySources) -> Self {
        self.memory_sources = sources;
        self
    }

    /// The date the prompt states (default: today, UTC); fixed in tests.
    pub fn date(mut self, date: impl Into<String>) -> Self {
        self.date = Some(date.into());
        self
    }

    /// Output token limit per model call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The model's context window in tokens (`--context-window`); `None`: the settings'
    /// `contextWindow`, else the figure of a well-known model, else the default.
    pub fn context_window(mut self, tokens: Option<u64>) -> Self {
        self.context_window = tokens;
        self
    }

    /// Model calls allowed per turn; `None` for no limit.
    pub fn max_rounds(mut self, max_rounds: Option<u32>) -> Self {
        self.max_rounds = max_rounds;
        self
    }

    /// The effective settings. Without an explicit [`policy`](Self::policy) the agent's
    /// permissions are the settings' `permissions` block.
    pub fn settings(mut self, settings: Arc<Settings>) -> Self {
        self.settings = settings;
        self
    }

    /// The permission policy, when it is not the settings' own (command-line rules merged in:
    /// see [`effective_policy`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Who answers when the policy says to ask.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// The base tool set (default: the built-in tools); extensions add to it.
    pub fn tools(mut self, tools: Registry) -> Self {
        self.tools = tools;
        self
    }

    /// Offers only these built-in tools (troupe's names; `--tools`): the others are left out of
    /// the tool list. Tools of extensions (the team's, MCP's) are not affected.
    pub fn only_tools(mut self, names: Option<Vec<String>>) -> Self {
        self.only_tools = names;
        self
    }

    /// Offers only the tools `filter` keeps — base tools, extensions' tools (except those of
    /// extensions whose tools are always kept) and the tools of tool sources, each time they are
    /// asked — so a tool that appears later is filtered too. `None`: no filter.
    pub fn tool_filter(mut self, filter: Option<ToolFilter>) -> Self {
        self.tool_filter = filter;
        self
    }

    /// Registers an extension: its tools, prompt sections, gates and inbox join the agent.
    pub fn extension(mut self, extension: Arc<dyn Extension>) -> Self {
        self.extensions.push(extension);
        self
    }

    /// The sandbox settings, when they are not the settings' own (a subagent takes its parent's,
    /// extra writable roots of a bound workspace included).
    pub fn sandbox(mut self, config: SandboxConfig) -> Self {
        self.sandbox = Some(config);
        self
    }

    /// Persists the conversation at `path`, restoring what it already holds.
    pub fn transcript(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript = Some(path.into());
        self
    }

    /// Hands every line synced to the transcript on to `mirror` too (a team that keeps
    /// conversations beyond this machine); without one the file is the only copy.
    pub fn transcript_mirror(
        mut self,
        mirror: Arc<dyn crate::transcript_mirror::TranscriptMirror>,
    ) -> Self {
        self.transcript_mirror = Some(mirror);
        self
    }

    /// The flag that will end the agent's turn after the current round: known before the agent
    /// exists, so its owner can hold it from the start.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Makes the agent: asks every extension for its contributions, assembles the system
    /// prompt, and attaches the transcript.
    pub fn build(self) -> Result<Agent, BuildError> {
        let mut policy = match self.policy {
            Some(policy) => policy,
            None => effective_policy(&self.settings.permissions, &PermissionFlags::default())?,
        };
        // The hook scripts the settings name are protected files, for the permission layer and
        // the sandbox alike.
        if policy.protected.paths().is_empty() {
            policy.protected = ProtectedPaths::from_hooks(&self.settings.hooks);
        }
        let live_mode = crate::LiveMode::new(policy.mode);
        let cx = ExtensionContext {
            agent: &self.name,
            workspace: self.workspace.root(),
            stop: &self.stop,
            transcript: self.transcript.as_deref(),
            mode: &live_mode,
            dirs: Some(&self.workspace),
        };
        let todo = crate::todo::TodoList::default();
        let compact_request = crate::compact::CompactRequest::default();
        let jobs = troupe_tools::background::Jobs::new(
            self.name.clone(),
            crate::background::log_dir(self.transcript.as_deref()),
        );
        jobs.set_auto_background(
            self.settings
                .bash_auto_background
                .map(std::time::Duration::from_secs_f64),
        );
        let mut extensions = self.extensions;
        extensions.insert(0, Arc::new(crate::todo::TodoExtension::new(todo.clone())));
        extensions.insert(
            1,
            Arc::new(crate::compact::CompactExtension::new(
                compact_request.clone(),
            )),
        );
        extensions.insert(
            2,
            Arc::new(crate::background::BackgroundExtension::new(jobs.clone())),
        );
        let mut tools = self.tools;
        if let Some(only) = &self.only_tools {
            tools.retain(|t| only.iter().any(|name| name == t.name()));
        }
        if let Some(filter) = &self.tool_filter {
            tools.retain(|t| filter.keeps(t.name()));
        }
        let mut sections = Vec::new();
        let mut own_sections = Vec::new();
        let mut gates = Vec::new();
        let mut inboxes = Vec::new();
        let mut workspace_sources = Vec::new();
        let mut lifecycle = Vec::new();
        let mut sources = Vec::new();
        let mut watchers = Vec::new();
        for extension in &extensions {
            let filter = match extension.tools_always_kept() {
                true => None,
                false => self.tool_filter.as_ref(),
            };
            for tool in extension.tools(&cx) {
                let left_out = self.only_tools.as_ref().is_some_and(|only| {
                    BUILT_IN_EXTENSION_TOOLS.contains(&tool.name())
                        && !only.iter().any(|name| name == tool.name())
                }) || filter.is_some_and(|f| !f.keeps(tool.name()));
                if !left_out {
                    tools.register(tool);
                }
            }
            sections.extend(extension.prompt_sections(&cx));
            own_sections.extend(extension.agent_prompt_sections(&cx));
            gates.extend(extension.gates(&cx));
            inboxes.extend(extension.inbox(&cx));
            workspace_sources.extend(extension.workspace_source(&cx));
            lifecycle.extend(extension.lifecycle(&cx));
            sources.extend(extension.tool_source(&cx).map(|inner| match filter {
                Some(filter) => Arc::new(FilteredSource {
                    inner,
                    filter: filter.clone(),
                }) as Arc<dyn crate::extension::ToolSource>,
                None => inner,
            }));
            watchers.extend(extension.watcher(&cx));
        }
        // A tool denied whole is not offered at all: the model cannot ask for what it never sees.
        tools.retain(|t| {
            !policy.rules.deny.iter().any(|rule| {
                rule.is_tool_wide() && rule.applies_to(crate::permissions::rule_name(t.name()))
            })
        });
        if tools.get("bash").is_none() {
            // Nothing can start a background command (a subagent limited to reading tools).
            for name in crate::background::TOOL_NAMES {
                tools.remove(name);
            }
        }
        let start = self.workspace.start_dir();
        if let Ok(below) = start.strip_prefix(self.workspace.root()) {
            if !below.as_os_str().is_empty() {
                own_sections.push(format!(
                    "# Working directory\nbash starts in {} (`{}` in the workspace), where troupe was started; file tool paths stay relative to the workspace root.",
                    start.display(),
                    below.display()
                ));
            }
        }
        let date = self.date.unwrap_or_else(today);
        let memory = crate::memory::load_excluding(
            self.workspace.root(),
            self.home.as_deref(),
            self.memory_sources,
            &policy.concealed(),
            &crate::memory_excludes::Excludes::of(&self.settings),
        );
        if let Some(language) = self
            .settings
            .other
            .get("language")
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            own_sections.push(format!("Respond in {language}."));
        }
        let system = system_prompt(&PromptContext {
            identity: &self.identity,
            workspace: self.workspace.root(),
            date: &date,
            extra: &sections,
            own: &own_sections,
            memory: &memory,
        });
        let home = self.workspace.root().to_path_buf();
        let window = crate::compact::CompactConfig::for_model(
            &self.model_name,
            self.context_window.or(self.settings.context_window),
        );
        let compactor = crate::compact::Compactor::new(
            window,
            crate::compact::SpillDir::new(None, &home),
            compact_request,
        );
        let mut sandbox = self
            .sandbox
            .unwrap_or_else(|| sandbox_config(&self.settings));
        // Commands allowed to write the workspace may write the directories added to it too.
        for dir in self.workspace.added_dirs() {
            if !sandbox.writable_roots.iter().any(|root| root == dir) {
                sandbox.writable_roots.push(dir.to_path_buf());
            }
        }
        sandbox.protected = policy.protected.paths().to_vec();
        sandbox.concealed = policy.concealed();
        let ctx = ToolContext::new(self.workspace, self.name.clone())
            .with_sandbox_config(Arc::new(sandbox))
            .with_background(jobs)
            .with_concealed(policy.concealed())
            .with_summarizer(self.summarizer);
        // TODO(settings.env): set `self.settings.env` on tool processes once ToolContext carries
        // an environment; the binary applies it to its own process meanwhile.
        let config = AgentConfig {
            name: self.name,
            model: self.model_name,
            max_tokens: self.max_tokens,
            max_rounds: self.max_rounds,
        };
        let mut agent = Agent::from_parts(crate::turn::Parts {
            config,
            model: self.model,
            system,
            tools,
            ctx,
            policy,
            live_mode,
            approver: self.approver,
            gates,
            inboxes,
            workspace_sources,
            lifecycle,
            sources,
            stop: self.stop,
            settings: self.settings,
            extensions,
            todo,
            compactor,
            watchers,
            home,
            instructions: crate::memory::instruction_files(&memory),
        });
        if let Some(path) = self.transcript {
            agent.attach_transcript(&path, self.transcript_mirror)?;
        }
        Ok(agent)
    }
}

/// The sandbox the settings ask for (`"sandbox"`), as the bash tool takes it.
pub fn sandbox_config(settings: &Settings) -> SandboxConfig {
    match &settings.sandbox {
        None => SandboxConfig {
            protected: ProtectedPaths::from_hooks(&settings.hooks).paths().to_vec(),
            ..SandboxConfig::default()
        },
        Some(given) => SandboxConfig {
            mode: match given.mode {
                troupe_settings::SandboxMode::Auto => SandboxMode::Auto,
                troupe_settings::SandboxMode::Off => SandboxMode::Off,
            },
            writable_roots: given.writable_roots.clone(),
            network: match given.network {
                troupe_settings::SandboxNetwork::Inet => Network::Inet,
                troupe_settings::SandboxNetwork::Allow => Network::Allow,
                troupe_settings::SandboxNetwork::Deny => Network::Deny,
            },
            protected: ProtectedPaths::from_hooks(&settings.hooks).paths().to_vec(),
            concealed: Default::default(),
            excluded_commands: given.excluded_commands.clone(),
        },
    }
}
