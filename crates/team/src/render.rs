//! The roster as text, for `/team`, `list_teammates` and `troupe team status`.

use troupe_protocol::{Roster, Task};

/// Seconds ago, as "5s", "3m", "2h".
pub fn age(now_ms: u64, then_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        _ => format!("{}h", secs / 3600),
    }
}

/// A table: name, role, status, epoch, tokens, last seen, worktree (its own, or its task's),
/// in-progress task (from the board's `tasks`), doing.
pub fn roster_table(roster: &Roster, tasks: &[Task]) -> String {
    let now = troupe_agent::transcript::now_ms();
    let mut rows = vec![[
        "NAME".to_string(),
        "ROLE".into(),
        "STATUS".into(),
        "EPOCH".into(),
        "TOKENS".into(),
        "SEEN".into(),
        "WORKTREE".into(),
        "TASK".into(),
        "DOING".into(),
    ]];
    for m in &roster.members {
        rows.push([
            m.name.clone(),
            m.role.clone(),
            m.status.as_str().to_string(),
            m.epoch.to_string(),
            m.usage.total().to_string(),
            format!("{} ago", age(now, m.last_seen)),
            crate::worktree::table::member_worktree_cell(m, tasks),
            crate::board::render::member_tasks_cell(tasks, &m.name),
            m.activity.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    let mut out = format!("team {} (lead: {})\n", roster.team, roster.lead);
    out.push_str(&columns(&rows));
    out
}

/// The members' background commands as a table under a heading ("background commands:"), or
/// nothing when no member has one running or waiting to be read.
pub fn background_table(roster: &Roster) -> String {
    let now = troupe_agent::transcript::now_ms();
    let mut rows = vec![[
        "MEMBER".to_string(),
        "ID".into(),
        "STATE".into(),
        "STARTED".into(),
        "COMMAND".into(),
    ]];
    for m in &roster.members {
        for job in &m.background {
            let state = match job.state {
                troupe_protocol::BackgroundState::Running => "running",
                troupe_protocol::BackgroundState::Finished => "finished",
            };
            rows.push([
                m.name.clone(),
                job.id.clone(),
                state.into(),
                format!("{} ago", age(now, job.started_ms)),
                job.command.clone(),
            ]);
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!("background commands:\n{}", columns(&rows))
}

/// Rows as left-aligned columns two spaces apart (the last column unpadded), one line each.
pub fn columns<R: AsRef<[String]>>(rows: &[R]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.as_ref().iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        let row = row.as_ref();
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
