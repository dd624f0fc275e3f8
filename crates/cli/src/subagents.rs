//! How the binary makes the `task` tool's subagents: from the run's recipe, like the lead —
//! working where the lead's tools work at the call (its workspace, or the worktree a task binds
//! it to, with the same sandbox), same model, reasoning, settings, rules, limit, approver,
//! memory sources, hooks, MCP servers and skills — with a fresh conversation, the definition's
//! prompt, model, stricter mode and tools (which filter the MCP servers' and skills' tools too),
//! and no `task` tool of their own.

use std::path::Path;
use std::sync::Arc;
use troupe_agent::permissions::PermissionMode;
use troupe_agent::{Agent, AgentKind, Approver, Place, Recipe, Role, ToolFilter};
use troupe_catalog::agents::{AgentDefinition, Definitions};
use troupe_catalog::subagent::{SubagentError, SubagentExtension, SubagentFactory};
use troupe_tools::{Registry, ToolContext};

/// Model calls one subagent may make (a runaway guard).
const MAX_ROUNDS: u32 = 100;

const IDENTITY: &str = "You are a troupe subagent: you do one task for another agent and \
report back. You see only the task below, not the conversation it came from. Work with your \
tools, then end with a concise final report of what you found or changed: it is all the other \
agent will see.";

/// What every subagent is made from: the run's recipe (the lead's model, reasoning, client,
/// settings, policy, limit, memory, added directories; the hooks, MCP servers and skills in a
/// subagent's form) and the parent's approver.
pub struct Factory {
    /// The run's recipe (one client: with prompt caching, subagents started at once let the
    /// first write their shared prefix and the others read it).
    pub recipe: Recipe,
    /// Who answers permission questions.
    pub approver: Arc<dyn Approver>,
    /// The lead's checkpoints, which a subagent's file changes join (the REPL's lead only).
    pub checkpoints: Option<Arc<dyn troupe_agent::Extension>>,
}

impl SubagentFactory for Factory {
    fn build(
        &self,
        definition: Option<&AgentDefinition>,
        parent: &ToolContext,
        mode: PermissionMode,
    ) -> Result<Agent, SubagentError> {
        let identity = match definition {
            Some(d) if !d.prompt.is_empty() => format!("{}\n\n{IDENTITY}", d.prompt),
            _ => IDENTITY.to_string(),
        };
        // Named after its definition, so logs and the model server can tell subagents apart.
        let name = definition
            .map(|d| d.name.as_str())
            .filter(|n| troupe_protocol::validate_agent_name(n).is_ok())
            .unwrap_or("subagent");
        let place = Place::Parent {
            workspace: parent.workspace.clone(),
            sandbox: (*parent.sandbox_config).clone(),
        };
        let mut role = Role::new(AgentKind::Subagent, name, place)
            .identity(identity)
            .model(definition.and_then(|d| d.model.clone()))
            // The parent's mode now (Shift-Tab, the SDK may have changed it since the run was
            // resolved); a definition may make its agent stricter still, never looser: the
            // definition is a file in the workspace the model itself could have written.
            .stricter_mode(Some(match troupe_team::profile::asked_mode(definition) {
                Some(asked) => mode.tightened_by(asked),
                None => mode,
            }))
            .approver(self.approver.clone())
            .max_rounds(Some(MAX_ROUNDS));
        if let Some(checkpoints) = &self.checkpoints {
            role = role.extension(checkpoints.clone());
        }
        if let Some(tools) = definition.and_then(|d| d.tools.as_ref()) {
            let mut registry = Registry::with_builtins();
            registry.retain(|t| tools.iter().any(|name| name == t.name()));
            role = role.tools(registry);
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
        Ok(self.recipe.build(role.tool_filter(filter))?)
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
