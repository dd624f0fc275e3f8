//! `--agent NAME` (or the settings' `agent`): the lead runs as one of the run's agent definitions, as Claude Code's main
//! thread does — the definition's body joins the lead's system prompt, its `tools` filter the
//! lead's tools, its `model` is the lead's unless `--model` names one, and its
//! `permissionMode` may make the lead stricter (never looser: the file is in the workspace).

use anyhow::{bail, Result};
use std::sync::Arc;
use troupe_agent::{Extension, ExtensionContext, Role, ToolFilter};
use troupe_catalog::agents::{AgentDefinition, Definitions};

/// The definition `--agent` names, `None` without the flag; an unknown name is an error
/// listing the known ones.
pub fn chosen<'a>(
    definitions: &'a Definitions,
    name: Option<&str>,
) -> Result<Option<&'a AgentDefinition>> {
    let Some(name) = name else {
        return Ok(None);
    };
    if let Some(definition) = definitions.get(name) {
        return Ok(Some(definition));
    }
    let known: Vec<&str> = definitions.agents.iter().map(|a| a.name.as_str()).collect();
    let known = match known.is_empty() {
        true => "none (define one in .claude/agents/<name>.md or with --agents)".to_string(),
        false => known.join(", "),
    };
    bail!("agent {name} (--agent or the settings' `agent`): no agent definition of that name; the known agents: {known}")
}

/// `role` made to run as `definition`; its model only when `model_given` is false.
pub fn apply(role: Role, definition: &AgentDefinition, model_given: bool) -> Role {
    let mut role = role.stricter_mode(troupe_team::profile::asked_mode(Some(definition)));
    if !model_given {
        role = role.model(definition.model.clone());
    }
    if !definition.prompt.is_empty() {
        role = role.extension(Arc::new(AgentPrompt(definition.prompt.clone())));
    }
    role.tool_filter(tool_filter(definition))
}

/// The definition's `tools` as a filter; the todo list and compaction stay, as every agent
/// has them.
fn tool_filter(definition: &AgentDefinition) -> Option<ToolFilter> {
    let profile = troupe_protocol::MemberProfile::default();
    let filter = troupe_team::profile::tool_filter(&profile, Some(definition))?;
    Some(ToolFilter::new(move |name| {
        name == troupe_agent::todo::TOOL_NAME
            || name == troupe_agent::compact::tool::TOOL_NAME
            || filter.keeps(name)
    }))
}

/// The definition's body, a section of the lead's own system prompt.
struct AgentPrompt(String);

impl Extension for AgentPrompt {
    fn name(&self) -> &str {
        "agent"
    }
    fn agent_prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![self.0.clone()]
    }
}
