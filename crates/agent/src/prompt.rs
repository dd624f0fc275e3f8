//! System prompt assembly: identity, workspace, date, platform, tool guidance, project memory,
//! and any extra sections (the team crate adds the team's).

use crate::memory::Memory;
use std::path::Path;

/// Inputs to the system prompt.
#[derive(Debug, Clone)]
pub struct PromptContext<'a> {
    /// Who the agent is (`troupe`, or a teammate's identity line).
    pub identity: &'a str,
    /// Workspace root.
    pub workspace: &'a Path,
    /// Today's date, `YYYY-MM-DD`.
    pub date: &'a str,
    /// Names of the tools the agent has.
    pub tools: &'a [String],
    /// Extra sections appended at the end (team, protocols).
    pub extra: &'a [String],
    /// The memory files' text (see [`crate::memory`]).
    pub memory: &'a Memory,
}

/// Today's date in UTC as `YYYY-MM-DD`.
pub fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day()
    )
}

/// Builds the system prompt.
pub fn system_prompt(ctx: &PromptContext<'_>) -> String {
    let mut out = String::with_capacity(4096);
    out.push_str(ctx.identity);
    out.push_str("\n\n# Environment\n");
    out.push_str(&format!(
        "- Workspace (all paths are relative to it; you cannot leave it): {}\n",
        ctx.workspace.display()
    ));
    out.push_str(&format!("- Date: {}\n", ctx.date));
    out.push_str(&format!(
        "- Platform: {} {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    out.push_str(&format!("- Tools: {}\n", ctx.tools.join(", ")));
    out.push_str(TOOL_GUIDANCE);
    if !ctx.memory.user_text().is_empty() {
        out.push_str("\n# User memory\n");
        out.push_str(ctx.memory.user_text());
    }
    if !ctx.memory.project_text().is_empty() {
        out.push_str("\n# Project memory\nInstructions from the project; follow them.\n\n");
        out.push_str(ctx.memory.project_text());
    }
    for section in ctx.extra {
        out.push('\n');
        out.push_str(section);
        out.push('\n');
    }
    out
}

const TOOL_GUIDANCE: &str = "
# How to work
- Act, don't narrate: use the tools to inspect and change the workspace, then report briefly.
- Find files with glob and search contents with grep before reading whole files; read_file shows line numbers.
- Change files with edit_file (exact text, unique unless replace_all) or write_file for new files; re-read before editing a file you have not seen.
- bash runs in the workspace root with a timeout; prefer the dedicated tools for reading and searching.
- When a tool returns an error, read it and adjust; do not repeat the same failing call.
- When the task is done, answer with a short summary and no tool call.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_carries_memory_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "Always run cargo fmt.").unwrap();
        let tools = vec!["bash".to_string(), "read_file".to_string()];
        let extra = vec!["# Team\nYou lead team default.".to_string()];
        let prompt = system_prompt(&PromptContext {
            identity: "You are troupe.",
            workspace: dir.path(),
            date: "2026-11-21",
            tools: &tools,
            extra: &extra,
            memory: &crate::memory::load(dir.path(), None),
        });
        assert!(prompt.starts_with("You are troupe."));
        assert!(prompt.contains("Always run cargo fmt."));
        assert!(prompt.contains("2026-11-21"));
        assert!(prompt.contains("bash, read_file"));
        assert!(prompt.contains("You lead team default."));
        assert!(prompt.contains(std::env::consts::OS));
    }
}
