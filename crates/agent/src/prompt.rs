//! System prompt assembly, in the order prompt caching wants: first what every agent of the
//! same tools and workspace shares (tool guidance, workspace, platform, tools, memory, shared
//! extension sections), then what is this agent's for its whole session (identity, its own
//! sections), last what may change between sessions (the date). The [`CacheMarks`] say where
//! the first two parts end.

use crate::memory::Memory;
use std::path::Path;
use troupe_model::CacheMarks;

/// Inputs to the system prompt.
#[derive(Debug, Clone)]
pub struct PromptContext<'a> {
    /// Who the agent is (`troupe`, or a teammate's identity line).
    pub identity: &'a str,
    /// Workspace root.
    pub workspace: &'a Path,
    /// Today's date, `YYYY-MM-DD`.
    pub date: &'a str,
    /// Extra sections every agent of the same tools shares (team rules, protocols).
    pub extra: &'a [String],
    /// Sections about this agent alone (its task, worktree, appended instructions).
    pub own: &'a [String],
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

/// A system prompt and where its cacheable parts end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    /// The text.
    pub text: String,
    /// Where the shared and the stable part end.
    pub marks: CacheMarks,
}

/// Builds the system prompt.
pub fn system_prompt(ctx: &PromptContext<'_>) -> SystemPrompt {
    let mut out = String::with_capacity(4096);
    out.push_str(TOOL_GUIDANCE.trim_start());
    out.push_str("\n# Environment\n");
    out.push_str(&format!(
        "- Workspace (all paths are relative to it; you cannot leave it): {}\n",
        ctx.workspace.display()
    ));
    out.push_str(&format!(
        "- Platform: {} {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
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
    let shared_end = out.len();
    out.push_str("\n# You\n");
    out.push_str(ctx.identity);
    out.push('\n');
    for section in ctx.own {
        out.push('\n');
        out.push_str(section);
        out.push('\n');
    }
    let stable_end = out.len();
    out.push_str(&format!("\n# Session\n- Date: {}\n", ctx.date));
    SystemPrompt {
        text: out,
        marks: CacheMarks {
            shared_end,
            stable_end,
        },
    }
}

const TOOL_GUIDANCE: &str = "
# How to work
- Act, don't narrate: use the tools to inspect and change the workspace, then report briefly.
- Find files with glob and search contents with grep before reading whole files; read_file shows line numbers.
- Change files with edit_file (exact text, unique unless replace_all) or write_file for new files; re-read before editing a file you have not seen.
- bash runs in the working directory with a timeout; prefer the dedicated tools for reading and searching.
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
        let extra = vec!["# Team\nYou lead team default.".to_string()];
        let own = vec!["# Your task\nFix the bug.".to_string()];
        let built = system_prompt(&PromptContext {
            identity: "You are troupe.",
            workspace: dir.path(),
            date: "2026-11-21",
            extra: &extra,
            own: &own,
            memory: &crate::memory::load(dir.path(), None),
        });
        let prompt = &built.text;
        let (shared, rest) = prompt.split_at(built.marks.shared_end);
        let (stable, volatile) = rest.split_at(built.marks.stable_end - built.marks.shared_end);
        // The shared part names no agent and no date; the date comes last.
        assert!(shared.contains("You lead team default.") && shared.contains("Platform: "));
        assert!(!shared.contains("You are troupe.") && !shared.contains("2026-11-21"));
        assert!(stable.contains("You are troupe.") && stable.contains("Fix the bug."));
        assert!(volatile.contains("2026-11-21") && !volatile.contains("Fix the bug."));
        assert!(prompt.contains("Always run cargo fmt."));
        assert!(prompt.contains("2026-11-21"));
        // The tools are listed in the request's tools, not again in the prompt.
        assert!(!prompt.contains("- Tools:"));
        assert!(prompt.contains("You lead team default."));
        assert!(prompt.contains(std::env::consts::OS));
    }
}
