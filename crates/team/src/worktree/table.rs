//! Worktrees as text, for `list_worktrees` and `troupe worktree list`.

use super::manage::{Listed, WorkState};
use super::WorktreeRecord;

/// "clean", "missing", or what it holds: "2 uncommitted file(s), 1 unmerged commit(s)".
pub fn state_text(state: &WorkState) -> String {
    if state.missing {
        return "missing (its directory is gone)".to_string();
    }
    let mut parts = Vec::new();
    if !state.uncommitted.is_empty() {
        parts.push(format!("{} uncommitted file(s)", state.uncommitted.len()));
    }
    if !state.unmerged.is_empty() {
        parts.push(format!("{} unmerged commit(s)", state.unmerged.len()));
    }
    if parts.is_empty() {
        "clean".to_string()
    } else {
        parts.join(", ")
    }
}

/// "task 3", "alice's own", or "-".
pub fn bound_text(record: &WorktreeRecord) -> String {
    match (record.task, &record.member) {
        (Some(id), _) => format!("task {id}"),
        (None, Some(m)) => format!("{m}'s own"),
        (None, None) => "-".to_string(),
    }
}

/// A table: name, status, branch, base, bound to, what it holds, path.
pub fn worktrees_table(list: &[Listed]) -> String {
    let mut rows = vec![[
        "NAME".to_string(),
        "STATUS".into(),
        "BRANCH".into(),
        "BASE".into(),
        "FOR".into(),
        "HOLDS".into(),
        "PATH".into(),
    ]];
    for l in list {
        let r = &l.record;
        let base_commit: String = r.base_commit.chars().take(8).collect();
        rows.push([
            r.name.clone(),
            r.status.as_str().to_string(),
            r.branch.clone(),
            r.base.clone().unwrap_or(base_commit),
            bound_text(r),
            state_text(&l.state),
            r.path.display().to_string(),
        ]);
    }
    crate::render::columns(&rows)
}

/// A member's worktree for the roster table: its own, or the one of the in-progress task it
/// owns, as "a (task 1)"; "-" when it has none.
pub fn member_worktree_cell(
    member: &troupe_protocol::Member,
    tasks: &[troupe_protocol::Task],
) -> String {
    if let Some(own) = &member.worktree {
        return own.clone();
    }
    tasks
        .iter()
        .filter(|t| {
            t.status == troupe_protocol::TaskStatus::InProgress
                && t.owner.as_deref() == Some(member.name.as_str())
        })
        .find_map(|t| Some(format!("{} (task {})", t.worktree.as_ref()?, t.id)))
        .unwrap_or_else(|| "-".to_string())
}
