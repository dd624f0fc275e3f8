//! What the system prompts say about worktrees.

use super::WorktreeRecord;
use crate::spec::LEAD;
use std::path::Path;

/// The worktree section of every team agent's system prompt.
pub fn section(agent: &str) -> String {
    let how = if agent == LEAD {
        "When teammates work in parallel on one repository, give each task its own git worktree: \
create_worktree{name, task_id} makes .troupe/worktrees/<name> on a new branch wt/<name>, and whoever owns that task works \
inside it. spawn_teammate{..., isolation: \"worktree\"} gives a teammate a worktree of its own for its whole life. \
When the work is committed, merge the branch (`git merge wt/<name>`) and remove_worktree{name}."
    } else {
        "When you own an in-progress task that is bound to a git worktree, your bash and file tools run inside that \
worktree (you are told when this changes): commit your work there, on its branch wt/<name>."
    };
    format!(
        "# Worktrees\n{how} remove_worktree refuses while a worktree holds uncommitted changes or unmerged commits \
(discard: true throws them away); keep_worktree leaves one in place; list_worktrees shows them all."
    )
}

/// The system prompt section of a teammate with its own worktree.
pub fn own_section(record: &WorktreeRecord, dir: &Path) -> String {
    format!(
        "# Your worktree\nYou work in your own git worktree '{name}' at {dir} on branch {branch} (started from {base}), for your whole life on the team: \
bash runs there and every file path resolves inside it; the main tree is out of your tools' reach, so teammates never edit your files. \
Commit your work there on {branch} (`git add` and `git commit`); the lead merges it.",
        name = record.name,
        dir = dir.display(),
        branch = record.branch,
        base = record.base.as_deref().unwrap_or(&record.base_commit),
    )
}
