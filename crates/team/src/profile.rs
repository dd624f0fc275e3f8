//! A teammate's profile (`spawn_teammate{agent, tools, mcp_servers}`): checked when it is
//! spawned, kept on the roster, and turned into the agent's definition prompt, model,
//! permission mode and tool filter every time the teammate is built — in this process or its
//! own, first spawn or respawn.

use crate::error::{MemberError, TeamError};
use crate::spec::TeamConfig;
use troupe_agent::permissions::PermissionMode;
use troupe_agent::ToolFilter;
use troupe_catalog::agents::{troupe_tool_name, AgentDefinition};
use troupe_protocol::MemberProfile;

/// The prefix of MCP tools' names (`mcp__<server>__<tool>`).
const MCP_PREFIX: &str = "mcp__";

/// Checks what a spawn asks for against what the team knows: the agent definition must exist,
/// each MCP server must be configured. Tool names are put in troupe's spelling (`Read` →
/// `read_file`). Errors list what is known, so the model can correct itself.
pub fn checked(
    config: &TeamConfig,
    mut profile: MemberProfile,
) -> Result<MemberProfile, TeamError> {
    if let Some(name) = &profile.agent {
        if config.agents.get(name).is_none() {
            return Err(TeamError::UnknownAgent {
                name: name.clone(),
                known: known_list(config.agents.agents.iter().map(|a| a.name.as_str())),
            });
        }
    }
    if let Some(servers) = &profile.mcp_servers {
        if let Some(unknown) = servers.iter().find(|s| !config.mcp_servers.contains(s)) {
            return Err(TeamError::UnknownMcpServer {
                name: unknown.clone(),
                known: known_list(config.mcp_servers.iter().map(String::as_str)),
            });
        }
    }
    if let Some(tools) = &mut profile.tools {
        if let Some(empty) = tools.iter().position(|t| t.trim().is_empty()) {
            return Err(TeamError::BadTools(format!(
                "entry {} of tools is empty",
                empty + 1
            )));
        }
        *tools = tools.iter().map(|t| troupe_tool_name(t.trim())).collect();
    }
    Ok(profile)
}

fn known_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.is_empty() {
        true => "none".to_string(),
        false => names.join(", "),
    }
}

/// The definition a profile names, read from the team's definitions; one that has gone since
/// the spawn fails the build rather than making the teammate without its restrictions.
pub fn definition<'a>(
    config: &'a TeamConfig,
    profile: &MemberProfile,
) -> Result<Option<&'a AgentDefinition>, MemberError> {
    let Some(name) = &profile.agent else {
        return Ok(None);
    };
    config
        .agents
        .get(name)
        .map(Some)
        .ok_or_else(|| MemberError::Definition(name.clone()))
}

/// The permission mode an agent made from `definition` asks for itself (its `permissionMode`),
/// which the recipe honours only when it is stricter than the run's: the file is in the
/// workspace, and the model could have written it.
pub fn asked_mode(definition: Option<&AgentDefinition>) -> Option<PermissionMode> {
    definition
        .and_then(|d| d.permission_mode.as_deref())
        .and_then(|m| m.parse::<PermissionMode>().ok())
}

/// The tool filter of a teammate: a tool stays when every list that applies lets it (the
/// spawn's `tools`, the definition's `tools`, and for an MCP tool the spawn's `mcp_servers`).
/// `None` when nothing restricts it.
pub fn tool_filter(
    profile: &MemberProfile,
    definition: Option<&AgentDefinition>,
) -> Option<ToolFilter> {
    let lists: Vec<Vec<String>> = profile
        .tools
        .iter()
        .chain(definition.and_then(|d| d.tools.as_ref()))
        .cloned()
        .collect();
    let servers = profile.mcp_servers.clone();
    if lists.is_empty() && servers.is_none() {
        return None;
    }
    Some(ToolFilter::new(move |name| {
        lists
            .iter()
            .all(|list| list.iter().any(|pattern| matches(pattern, name)))
            && match (&servers, mcp_server(name)) {
                (Some(servers), Some(server)) => servers.iter().any(|s| s == server),
                _ => true,
            }
    }))
}

/// Whether tool `name` is what `pattern` names: the same name, a `prefix*` it starts with, or
/// `mcp__<server>` for every tool of that server (as permission rules write it).
pub fn matches(pattern: &str, name: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix('*') {
        return name.starts_with(prefix);
    }
    if pattern == name {
        return true;
    }
    match (mcp_server(pattern), mcp_server(name)) {
        (Some(server), Some(of)) => {
            !pattern[MCP_PREFIX.len() + server.len()..].starts_with("__") && server == of
        }
        _ => false,
    }
}

/// The server of an MCP tool's name (`mcp__time__now` → `time`), `None` for other tools.
fn mcp_server(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(MCP_PREFIX)?;
    let server = rest.split_once("__").map_or(rest, |(server, _)| server);
    (!server.is_empty()).then_some(server)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn profile(tools: Option<&[&str]>, servers: Option<&[&str]>) -> MemberProfile {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        MemberProfile {
            agent: None,
            tools: tools.map(list),
            mcp_servers: servers.map(list),
        }
    }

    #[test]
    fn patterns_match_names_prefixes_and_whole_servers() {
        assert!(matches("read_file", "read_file"));
        assert!(!matches("read_file", "read_files"));
        assert!(matches("mcp__time__*", "mcp__time__now"));
        assert!(matches("mcp__time", "mcp__time__now"));
        assert!(!matches("mcp__time", "mcp__timer__now"));
        assert!(!matches("mcp__time__now", "mcp__time__later"));
        assert!(!matches("mcp__time", "bash"));
    }

    #[test]
    fn every_list_must_let_a_tool_through() {
        assert!(tool_filter(&profile(None, None), None).is_none());
        let f = tool_filter(&profile(Some(&["read_file", "mcp__time__*"]), None), None).unwrap();
        assert!(f.keeps("read_file") && f.keeps("mcp__time__now"));
        assert!(!f.keeps("bash") && !f.keeps("mcp__everything__echo"));
        let f = tool_filter(&profile(None, Some(&["time"])), None).unwrap();
        assert!(f.keeps("bash") && f.keeps("mcp__time__now") && f.keeps("connect_mcp"));
        assert!(!f.keeps("mcp__everything__echo"));
        let definition = AgentDefinition {
            name: "reviewer".into(),
            description: "reviews".into(),
            tools: Some(vec!["read_file".into(), "grep".into()]),
            model: None,
            permission_mode: Some("plan".into()),
            prompt: "Review.".into(),
            path: "r.md".into(),
        };
        let f = tool_filter(
            &profile(Some(&["read_file", "bash"]), None),
            Some(&definition),
        )
        .unwrap();
        assert!(f.keeps("read_file"));
        assert!(!f.keeps("bash") && !f.keeps("grep"), "both lists apply");
        assert_eq!(
            PermissionMode::AcceptEdits.tightened_by(asked_mode(Some(&definition)).unwrap()),
            PermissionMode::Plan
        );
        let loose = AgentDefinition {
            permission_mode: Some("bypassPermissions".into()),
            ..definition
        };
        assert_eq!(
            PermissionMode::Default.tightened_by(asked_mode(Some(&loose)).unwrap()),
            PermissionMode::Default,
            "a definition never loosens the team's mode"
        );
    }
}
