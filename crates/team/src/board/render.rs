//! The board as text: a table of tasks, one task in full, and the task cell of a member's
//! row — for the task tools, `troupe task` and `troupe team status`.

use crate::render::age;
use troupe_protocol::{BlockerStatus, Task, TaskId, TaskStatus};
use troupe_store::CorruptTask;

/// "1, 3".
pub fn id_list(list: &[TaskId]) -> String {
    list.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a task stands in a word or two: its status, and for a pending one whether it is
/// ready or what it waits on.
pub fn state(task: &Task, status: &BlockerStatus) -> String {
    match task.status {
        TaskStatus::Pending => {
            let waiting = task.waiting_on(status);
            if waiting.is_empty() {
                "pending (ready)".to_string()
            } else {
                format!("pending (waits on {})", id_list(&waiting))
            }
        }
        other => other.to_string(),
    }
}

/// Text cut to `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_string()
    }
}

/// A table of tasks: id, state, owner, blockers, subject. `status` holds the whole board's
/// statuses (a filtered listing may not show a task's blockers).
pub fn tasks_table(tasks: &[Task], status: &BlockerStatus) -> String {
    let mut rows = vec![[
        "ID".to_string(),
        "STATUS".into(),
        "OWNER".into(),
        "BLOCKED BY".into(),
        "SUBJECT".into(),
    ]];
    for t in tasks {
        rows.push([
            t.id.to_string(),
            state(t, status),
            t.owner.clone().unwrap_or_else(|| "-".into()),
            if t.blocked_by.is_empty() {
                "-".into()
            } else {
                id_list(&t.blocked_by)
            },
            cut(&t.subject, 80),
        ]);
    }
    crate::render::columns(&rows)
}

/// One task in full: status, owner, blockers, description, result and history.
pub fn task_detail(task: &Task, status: &BlockerStatus, now: u64) -> String {
    let mut out = format!("task {}: {}\n", task.id, task.subject);
    out.push_str(&format!("status: {}\n", state(task, status)));
    out.push_str(&format!(
        "owner: {}\n",
        task.owner.as_deref().unwrap_or("-")
    ));
    if !task.blocked_by.is_empty() {
        out.push_str(&format!("blocked by: {}\n", id_list(&task.blocked_by)));
    }
    if let Some(wt) = &task.worktree {
        out.push_str(&format!("worktree: {wt}\n"));
    }
    out.push_str(&format!(
        "created by {} {} ago\n",
        task.created_by,
        age(now, task.created_at)
    ));
    if !task.description.trim().is_empty() {
        out.push_str(&format!("description:\n{}\n", task.description.trim_end()));
    }
    if let Some(result) = &task.result {
        out.push_str(&format!("result:\n{}\n", result.trim_end()));
    }
    if !task.history.is_empty() {
        out.push_str("history:\n");
        for h in &task.history {
            if h.from == h.to {
                out.push_str(&format!(
                    "  edited by {} ({} ago): {}\n",
                    h.by,
                    age(now, h.at),
                    h.note.as_deref().unwrap_or("changed")
                ));
                continue;
            }
            out.push_str(&format!(
                "  {} -> {} by {} ({} ago){}\n",
                h.from,
                h.to,
                h.by,
                age(now, h.at),
                h.note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ));
        }
    }
    out
}

/// One line per unreadable task record, saying where it is and why.
pub fn corrupt_lines(corrupt: &[CorruptTask]) -> Vec<String> {
    corrupt
        .iter()
        .map(|c| {
            format!(
                "task {} is unreadable and was skipped ({}: {})",
                c.id, c.place, c.error
            )
        })
        .collect()
}

/// A member's in-progress tasks as one cell ("#3 write parser"), "-" when none.
pub fn member_tasks_cell(tasks: &[Task], name: &str) -> String {
    let cells: Vec<String> = super::tasks_of(tasks, name)
        .iter()
        .map(|t| format!("#{} {}", t.id, cut(&t.subject, 40)))
        .collect();
    if cells.is_empty() {
        "-".into()
    } else {
        cells.join("; ")
    }
}
