//! How the binary makes the `task` tool's subagents: like the lead — working where the lead's
//! tools work at the call (its workspace, or the worktree a task binds it to, with the same
//! sandbox), same model, settings, rules, approver, memory sources, hooks, MCP servers and
//! skills — with a fresh conversation, the definition's prompt, model and tools (which filter
//! the MCP servers' and skills' tools too), and no `task` tool of their own.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_agent::permissions::{PermissionMode, Policy};
use troupe_agent::{Agent, AgentBuilder, Approver, Extension, ToolFilter};
use troupe_catalog::agents::{AgentDefinition, Definitions};
use troupe_catalog::subagent::{SubagentError, SubagentExtension, SubagentFactory};
use troupe_model::ModelConfig;
use troupe_settings::Settings;
use troupe_tools::{Registry, ToolContext};

/// Model calls one subagent may make (a runaway guard).
const MAX_ROUNDS: u32 = 100;

const IDENTITY: &str = "You are a troupe subagent: you do one task for another agent and \
report back. You see only the task below, not the conversation it came from. Work with your \
tools, then end with a concise final report of what you found or changed: it is all the other \
agent will see.";

/// What every subagent is made from.
pub struct Factory {
    /// The parent's model.
    pub model: ModelConfig,
    /// The parent's client (one connection pool; with prompt caching, subagents started at
    /// once let the first write their shared prefix and the others read it).
    pub client: Arc<dyn troupe_model::Model>,
    /// Effective settings.
    pub settings: Arc<Settings>,
    /// The parent's permission policy.
    pub policy: Policy,
    /// Who answers permission questions.
    pub approver: Arc<dyn Approver>,
    /// Output token limit per call.
    pub max_tokens: u32,
    /// The user's home, for memory.
    pub home: Option<PathBuf>,
    /// Which memory files go into a subagent's prompt (the parent's setting sources).
    pub memory_sources: troupe_agent::memory::MemorySources,
    /// Extensions every subagent gets as its definition allows (the workspace's hooks, ending
    /// in `SubagentStop`; the MCP servers; the skills): a definition's `tools` filter their
    /// tools as they filter the built-in ones.
    pub extensions: Vec<Arc<dyn Extension>>,
}

impl SubagentFactory for Factory {
    fn build(
        &self,
        definition: Option<&AgentDefinition>,
        parent: &ToolContext,
    ) -> Result<Agent, SubagentError> {
        let model = ModelConfig {
            model: definition
                .and_then(|d| d.model.clone())
                .unwrap_or_else(|| self.model.model.clone()),
            ..self.model.clone()
        };
        let mut policy = self.policy.clone();
        // A definition may make its agent stricter, never looser than its parent: the
        // definition is a file in the workspace the model itself could have written.
        if let Some(asked) = definition
            .and_then(|d| d.permission_mode.as_deref())
            .and_then(|m| m.parse::<PermissionMode>().ok())
        {
            policy.mode = policy.mode.tightened_by(asked);
        }
        let identity = match definition {
            Some(d) if !d.prompt.is_empty() => format!("{}\n\n{IDENTITY}", d.prompt),
            _ => IDENTITY.to_string(),
        };
        // Named after its definition, so logs and the model server can tell subagents apart.
        let name = definition
            .map(|d| d.name.as_str())
            .filter(|n| troupe_protocol::validate_agent_name(n).is_ok())
            .unwrap_or("subagent");
        let mut builder = AgentBuilder::new(
            name,
            parent.workspace.clone(),
            self.client.clone(),
            model.model.clone(),
        )
        .sandbox((*parent.sandbox_config).clone())
        .identity(identity)
        .home(self.home.clone())
        .memory_sources(self.memory_sources)
        .settings(self.settings.clone())
        .policy(policy)
        .approver(self.approver.clone())
        .max_tokens(self.max_tokens)
        .max_rounds(Some(MAX_ROUNDS));
        builder = self
            .extensions
            .iter()
            .cloned()
            .fold(builder, AgentBuilder::extension);
        if let Some(tools) = definition.and_then(|d| d.tools.as_ref()) {
            let mut registry = Registry::with_builtins();
            registry.retain(|t| tools.iter().any(|name| name == t.name()));
            builder = builder.tools(registry);
        }
        // The definition's tools decide the extensions' tools too (an MCP server's, the
        // skills'), as they do a teammate's spawned from the same definition.
        // The todo list and compaction stay: every agent has them.
        let filter = troupe_team::profile::tool_filter(
            &troupe_protocol::MemberProfile::default(),
            definition,
        )
        .map(|f| {
            ToolFilter::new(move |name| {
                name == troupe_agent::todo::TOOL_NAME
                    || name == troupe_agent::compact::tool::TOOL_NAME
                    || f.keeps(name)
            })
        });
        builder = builder.tool_filter(filter);
        Ok(builder.build()?)
    }
}

/// The project's and the user's agent definitions, for `task` and `spawn_teammate{agent}`
/// (skipped files are reported on stderr when `report` says so).
pub fn definitions(workspace: &Path, home: Option<&Path>, report: Report) -> Arc<Definitions> {
    let definitions = troupe_catalog::agents::load(workspace, home);
    if report == Report::Warn {
        for skipped in &definitions.skipped {
            eprintln!(
                "troupe: warning: skipped agent definition {}: {}",
                skipped.path.display(),
                skipped.why
            );
        }
    }
    Arc::new(definitions)
}

/// Whether loading definitions warns about the files it skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Warn on stderr (the lead).
    Warn,
    /// Say nothing (a teammate process: the lead warned already).
    Quiet,
}

/// The `task` tool for an agent, over `definitions`.
pub fn extension(definitions: Arc<Definitions>, factory: Factory) -> Arc<SubagentExtension> {
    Arc::new(SubagentExtension::new(definitions, Arc::new(factory)))
}
