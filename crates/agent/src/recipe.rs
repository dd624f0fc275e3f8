//! [`Recipe`]: what every agent of a run is made from, resolved once (model and client, settings,
//! permission policy, output limit, memory sources, added directories, the extensions the run
//! shares), and [`Recipe::build`], the one function that makes any agent of the run from it —
//! the lead, a teammate in its process or in its own, a subagent. What differs between them is
//! the [`Role`]: who the agent is, where it works, who answers its questions, its own limits,
//! tools and extensions. A role can choose another model name and make the permission mode
//! stricter; it cannot change anything else the run resolved, so the kinds of agents cannot
//! drift apart.

use crate::builder::{AgentBuilder, BuildError};
use crate::extension::{Approver, Extension, RefuseApprover};
use crate::memory::MemorySources;
use crate::permissions::{PermissionMode, Policy};
use crate::tool_filter::ToolFilter;
use crate::transcript_mirror::TranscriptMirror;
use crate::turn::Agent;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use troupe_model::{Model, ModelConfig};
use troupe_settings::Settings;
use troupe_tools::{Registry, SandboxConfig, Workspace};

/// Which kind of agent a [`Role`] makes: it decides the form the run's shared extensions take
/// for it (a subagent's end is `SubagentStop` to the hooks, a teammate's hooks know its team).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// The agent the person or the script talks to (the lead).
    Main,
    /// A long-lived member of a named group of agents (a teammate of a team).
    Member {
        /// The group's name.
        group: String,
    },
    /// A one-shot agent doing one task for another (a subagent).
    Subagent,
}

/// The extensions every agent of a run gets, in the form each [`AgentKind`] takes (the
/// workspace's hooks, MCP servers, skills, scheduled prompts): decided once, by whoever
/// resolves the run.
pub type SharedExtensions = Arc<dyn Fn(&AgentKind) -> Vec<Arc<dyn Extension>> + Send + Sync>;

/// The model agents made from now on call: the run's model (name, provider, reasoning) and its
/// client (one connection pool, one bound on concurrent calls, the reasoning set once).
#[derive(Clone)]
struct Current {
    model: ModelConfig,
    client: Arc<dyn Model>,
}

/// What every agent of a run is made from. Cloned into each place that makes agents (the
/// team, the `task` tool); never changed there, except the model (see [`Recipe::set_model`]).
#[derive(Clone)]
pub struct Recipe {
    /// The run's model and client, shared by every clone of the recipe.
    current: Arc<RwLock<Current>>,
    /// The effective settings (the files `--setting-sources` selects, `--settings`, the flags
    /// that override settings).
    pub settings: Arc<Settings>,
    /// The permission policy (settings and flags merged).
    pub policy: Policy,
    /// Output token limit per model call.
    pub max_tokens: u32,
    /// The user's home, for the user's memory files (`None`: none).
    pub home: Option<PathBuf>,
    /// Which memory files go into every agent's prompt.
    pub memory_sources: MemorySources,
    /// Directories besides the workspace every agent's tools may use, canonical.
    pub added_dirs: Vec<PathBuf>,
    /// The extensions every agent gets, by kind.
    pub shared: SharedExtensions,
    /// A restriction on every agent's tools (`--tools`), on top of each role's own filter;
    /// extensions whose tools are always kept (a teammate's mail) are not restricted.
    pub tool_filter: Option<ToolFilter>,
    /// What answers web_fetch's prompts for every agent (the run's small, fast model).
    pub summarizer: Option<Arc<dyn troupe_tools::Summarizer>>,
}

impl Recipe {
    /// A recipe of `model` called through `client`, with default settings, policy and limit,
    /// every memory file, no added directory and no shared extension.
    pub fn new(model: ModelConfig, client: Arc<dyn Model>) -> Recipe {
        Recipe {
            current: Arc::new(RwLock::new(Current { model, client })),
            settings: Arc::new(Settings::default()),
            policy: Policy::default(),
            max_tokens: crate::builder::DEFAULT_MAX_TOKENS,
            home: None,
            memory_sources: MemorySources::default(),
            added_dirs: Vec::new(),
            shared: Arc::new(|_| Vec::new()),
            tool_filter: None,
            summarizer: None,
        }
    }

    /// The run's model now: name, provider, reasoning (thinking and effort). A role may name
    /// another model of the same provider; everything else holds for every agent.
    pub fn model(&self) -> ModelConfig {
        self.current().model
    }

    /// The run's client now: every agent made from now on calls through it.
    pub fn client(&self) -> Arc<dyn Model> {
        self.current().client
    }

    /// Switches the run's model (the lead's `/model`, the SDK's `set_model` or
    /// `set_max_thinking_tokens`) for every agent made from now on from this recipe or any
    /// clone of it — teammates spawned and subagents started afterwards, as Claude Code's
    /// subagents inherit the main model. Agents already made keep theirs.
    pub fn set_model(&self, model: ModelConfig, client: Arc<dyn Model>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Current { model, client };
    }

    fn current(&self) -> Current {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The one way any agent of the run is made: the run's model, client, settings, policy
    /// (made stricter if the role asks), limit, memory and added directories; the shared
    /// extensions in the role's kind's form, then the role's own.
    pub fn build(&self, role: Role) -> Result<Agent, BuildError> {
        let (workspace, sandbox) = match role.place {
            Place::Root { dir, start } => {
                let opened = Workspace::new(&dir)
                    .and_then(|ws| ws.with_added_dirs(&self.added_dirs))
                    .map_err(|source| BuildError::Workspace {
                        root: dir.clone(),
                        source,
                    })?;
                let opened = match start {
                    Some(start) => opened.with_start(&start),
                    None => opened,
                };
                (Arc::new(opened), None)
            }
            Place::Parent { workspace, sandbox } => (workspace, Some(sandbox)),
        };
        let mut policy = self.policy.clone();
        if let Some(asked) = role.stricter_mode {
            policy.mode = policy.mode.tightened_by(asked);
        }
        let current = self.current();
        // A role's model may be an alias (`haiku` in an agent's front matter).
        let model_name = match role.model {
            Some(name) => current.model.named(&name, &troupe_tools::child_env::var),
            None => current.model.model,
        };
        let mut builder = AgentBuilder::new(role.name, workspace, current.client, model_name)
            .home(self.home.clone())
            .memory_sources(self.memory_sources)
            .settings(self.settings.clone())
            .policy(policy)
            .approver(role.approver)
            .max_tokens(self.max_tokens)
            .max_rounds(role.max_rounds)
            .only_tools(role.only_tools)
            .tool_filter(ToolFilter::both(self.tool_filter.clone(), role.tool_filter))
            .summarizer(self.summarizer.clone());
        if let Some(identity) = role.identity {
            builder = builder.identity(identity);
        }
        if let Some(sandbox) = sandbox {
            builder = builder.sandbox(sandbox);
        }
        if let Some(tools) = role.tools {
            builder = builder.tools(tools);
        }
        // The person's agent asks them questions and plans with them; a later extension's
        // tool of the same name (a teammate's exit_plan_mode) would replace these.
        let own: Option<Arc<dyn Extension>> = match role.kind {
            AgentKind::Main => Some(Arc::new(crate::session_tools::SessionToolsExtension)),
            AgentKind::Member { .. } | AgentKind::Subagent => None,
        };
        let extensions = own
            .into_iter()
            .chain((self.shared)(&role.kind))
            .chain(role.extensions);
        builder = extensions.fold(builder, AgentBuilder::extension);
        if let Some(path) = role.transcript {
            builder = builder.transcript(path);
        }
        if let Some(mirror) = role.transcript_mirror {
            builder = builder.transcript_mirror(mirror);
        }
        builder.build()
    }
}

/// Where an agent's tools work.
pub enum Place {
    /// A directory of its own (the workspace, a teammate's worktree), with the run's added
    /// directories; bash starts in `start` when given (a folder below the root).
    Root {
        /// The directory.
        dir: PathBuf,
        /// Where bash starts, if not at the root.
        start: Option<PathBuf>,
    },
    /// Where its parent's tools work at the call (a subagent): the parent's workspace, as a
    /// task may have bound it, and its sandbox.
    Parent {
        /// The parent's workspace.
        workspace: Arc<Workspace>,
        /// The parent's sandbox.
        sandbox: SandboxConfig,
    },
}

/// What one agent is besides the run's [`Recipe`]: who it is, where it works, who answers its
/// permission questions, its own limit on model calls, tools and extensions, its transcript.
pub struct Role {
    kind: AgentKind,
    name: String,
    place: Place,
    approver: Arc<dyn Approver>,
    model: Option<String>,
    identity: Option<String>,
    stricter_mode: Option<PermissionMode>,
    max_rounds: Option<u32>,
    tools: Option<Registry>,
    only_tools: Option<Vec<String>>,
    tool_filter: Option<ToolFilter>,
    extensions: Vec<Arc<dyn Extension>>,
    transcript: Option<PathBuf>,
    transcript_mirror: Option<Arc<dyn TranscriptMirror>>,
}

impl Role {
    /// An agent of `kind` named `name` working at `place`, with the default identity, the run's
    /// model, no limit on model calls, the built-in tools, an approver that refuses what the
    /// policy would ask about, and no transcript.
    pub fn new(kind: AgentKind, name: impl Into<String>, place: Place) -> Role {
        Role {
            kind,
            name: name.into(),
            place,
            approver: Arc::new(RefuseApprover),
            model: None,
            identity: None,
            stricter_mode: None,
            max_rounds: None,
            tools: None,
            only_tools: None,
            tool_filter: None,
            extensions: Vec::new(),
            transcript: None,
            transcript_mirror: None,
        }
    }

    /// Who answers when the policy says to ask.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Role {
        self.approver = approver;
        self
    }

    /// Another model name than the run's (same provider and client).
    pub fn model(mut self, model: Option<String>) -> Role {
        self.model = model;
        self
    }

    /// The first part of the system prompt: who the agent is.
    pub fn identity(mut self, identity: impl Into<String>) -> Role {
        self.identity = Some(identity.into());
        self
    }

    /// A permission mode the agent asks for itself: honoured only when it is stricter than the
    /// run's ([`PermissionMode::tightened_by`]).
    pub fn stricter_mode(mut self, mode: Option<PermissionMode>) -> Role {
        self.stricter_mode = mode;
        self
    }

    /// Model calls allowed per turn (`None`: no limit).
    pub fn max_rounds(mut self, rounds: Option<u32>) -> Role {
        self.max_rounds = rounds;
        self
    }

    /// The base tool set, when not all the built-in tools.
    pub fn tools(mut self, tools: Registry) -> Role {
        self.tools = Some(tools);
        self
    }

    /// Only these built-in tools (see [`AgentBuilder::only_tools`]).
    pub fn only_tools(mut self, names: Option<Vec<String>>) -> Role {
        self.only_tools = names;
        self
    }

    /// Only the tools `filter` keeps (see [`AgentBuilder::tool_filter`]).
    pub fn tool_filter(mut self, filter: Option<ToolFilter>) -> Role {
        self.tool_filter = filter;
        self
    }

    /// One more extension of the role's own, after the run's shared ones.
    pub fn extension(mut self, extension: Arc<dyn Extension>) -> Role {
        self.extensions.push(extension);
        self
    }

    /// Persists the conversation at `path`, restoring what it already holds.
    pub fn transcript(mut self, path: impl Into<PathBuf>) -> Role {
        self.transcript = Some(path.into());
        self
    }

    /// Hands every synced transcript line on to `mirror` too.
    pub fn transcript_mirror(mut self, mirror: Option<Arc<dyn TranscriptMirror>>) -> Role {
        self.transcript_mirror = mirror;
        self
    }
}

#[cfg(test)]
#[path = "recipe_tests.rs"]
mod tests;
