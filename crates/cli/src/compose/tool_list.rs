//! `--tools`: the tools every agent of the run may be offered, as Claude Code's flag restricts
//! its session's built-in tools. Named in Claude Code's spelling or troupe's; troupe's team
//! tools (`spawn_teammate`, `send_message`, the task board's…) and its scheduling tools are
//! built-in tools here as they are in Claude Code, so a list that does not name them leaves
//! them out. MCP servers' tools are not built-in tools and stay.

use troupe_agent::permissions::split_rule_list;
use troupe_agent::ToolFilter;

/// The tools `--tools` names, in troupe's spelling; `None` for all of them (no flag, or
/// `default`), an empty list for none (`""`).
pub fn named(list: Option<&str>) -> Option<Vec<String>> {
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

/// The filter a run's agents are built with: a tool stays when the list names it, when it is
/// an MCP server's, or when it follows a background command (kept only with `bash`).
pub fn filter(named: Option<&[String]>) -> Option<ToolFilter> {
    let named = named?.to_vec();
    Some(ToolFilter::new(move |tool| {
        named.iter().any(|n| n == tool)
            || tool.starts_with("mcp__")
            || troupe_agent::background::TOOL_NAMES.contains(&tool)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_names_become_troupes_and_team_tools_need_naming() {
        assert_eq!(named(None), None);
        assert_eq!(named(Some("default")), None);
        assert_eq!(named(Some("")), Some(Vec::new()));
        let list = named(Some("Read,Bash send_message"));
        assert_eq!(
            list.as_deref(),
            Some(&["read_file".into(), "bash".into(), "send_message".into()][..])
        );
        let keep = filter(list.as_deref()).map(|f| move |t: &str| f.keeps(t));
        let Some(keep) = keep else {
            panic!("a list makes a filter")
        };
        for kept in [
            "read_file",
            "bash",
            "send_message",
            "mcp__time__now",
            "bash_output",
        ] {
            assert!(keep(kept), "{kept}");
        }
        for gone in [
            "spawn_teammate",
            "task",
            "write_file",
            "todo_write",
            "create_task",
        ] {
            assert!(!keep(gone), "{gone}");
        }
        assert!(filter(None).is_none());
    }
}
