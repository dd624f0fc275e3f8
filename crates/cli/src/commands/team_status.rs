//! `troupe team status [--json]`: the team at a glance from another terminal. The human view
//! is one aligned row per member (the lead first) with the status the dashboard shows —
//! waiting for an answer, gone when no live process holds its lease — in colour when stdout
//! is a terminal (and `NO_COLOR` is unset), then the pending requests with how to answer
//! them. `--json` gives scripts the roster, the pending requests, the board and the usage.

use std::collections::HashMap;
use std::io::IsTerminal;

use anyhow::Result;
use crossterm::style::{ContentStyle, Stylize};
use serde_json::{json, Value};
use troupe_protocol::{AgentStatus, RequestStatus, Usage};
use troupe_store::TeamStore;
use troupe_team::board::render::member_tasks_cell;
use troupe_team::protocols::list::requests_table;
use troupe_team::worktree::table::member_worktree_cell;
use troupe_team::LEAD;
use troupe_watch::model::{
    agent_cost, member_model, member_rows, pending_requests, shown_status, Shown,
};
use troupe_watch::source::read_state;
use troupe_watch::text::{age, money, tokens};

use crate::cost::known_cost_usd;
use crate::render::sanitize::terminal;

/// Whether text goes out with colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// ANSI colours.
    Colour,
    /// Plain text (piped, or `NO_COLOR`).
    Plain,
}

impl Paint {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stdout() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if std::io::stdout().is_terminal() && !no_color {
            Paint::Colour
        } else {
            Paint::Plain
        }
    }
}

/// Prices tokens for the dashboard and the status (known models only).
pub fn price(model: &str, usage: &Usage) -> Option<f64> {
    known_cost_usd(model, usage)
}

/// The terminal style of a shown status.
fn style(shown: &Shown) -> ContentStyle {
    let plain = ContentStyle::new();
    match shown {
        Shown::Working | Shown::LeadLive => plain.dark_green(),
        Shown::Idle => plain.dark_blue(),
        Shown::Waiting { .. } => plain.bold().dark_yellow(),
        Shown::Shutdown | Shown::LeadAbsent => plain.dim(),
        Shown::Stopped => plain.dark_magenta(),
        Shown::Failed | Shown::Gone(_) => plain.bold().dark_red(),
    }
}

/// Rows as left-aligned columns two spaces apart (the last unpadded); the cell of column
/// `painted` is wrapped in its row's style after padding, so colour never breaks alignment.
fn columns(rows: &[Vec<String>], painted: usize, styles: &[Option<ContentStyle>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            match widths.get_mut(i) {
                Some(x) => *x = (*x).max(w),
                None => widths.push(w),
            }
        }
    }
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let text = if i + 1 == row.len() {
                cell.clone()
            } else {
                format!("{cell:<width$}  ", width = widths[i])
            };
            match styles.get(r).copied().flatten() {
                Some(style) if i == painted => {
                    let pad = text.len() - text.trim_end().len();
                    line.push_str(&format!(
                        "{}{}",
                        style.apply(text.trim_end()),
                        " ".repeat(pad)
                    ));
                }
                _ => line.push_str(&text),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The human status: the roster table, then the pending requests. Every text from the team is
/// already made safe for a terminal; print it as it is.
pub async fn human(store: &dyn TeamStore, paint: Paint) -> Result<String> {
    let state = read_state(store).await?;
    let now = troupe_agent::transcript::now_ms();
    let mut out = format!("team {} (lead: {LEAD})\n", terminal(store.team()));
    if state.roster.members.is_empty() {
        out.push_str(&format!("team {} has no teammates yet\n", store.team()));
    }
    let rows = member_rows(&state, &HashMap::new(), Some(price));
    let mut table = vec![[
        "NAME", "ROLE", "STATUS", "EPOCH", "TOKENS", "COST", "SEEN", "WORKTREE", "TASK", "DOING",
    ]
    .map(String::from)
    .to_vec()];
    let mut styles: Vec<Option<ContentStyle>> = vec![None];
    for row in &rows {
        let member = state.roster.get(&row.name);
        table.push(vec![
            row.name.clone(),
            row.role.clone(),
            row.shown.label(),
            member.map_or_else(|| "-".into(), |m| m.epoch.to_string()),
            row.tokens.map_or_else(|| "-".into(), tokens),
            money(row.cost),
            if row.last_active == 0 {
                "-".into()
            } else {
                format!("{} ago", age(now, row.last_active))
            },
            member.map_or_else(|| "-".into(), |m| member_worktree_cell(m, &state.tasks)),
            member_tasks_cell(&state.tasks, &row.name),
            row.doing.clone().unwrap_or_else(|| "-".into()),
        ]);
        styles.push(match paint {
            Paint::Colour => Some(style(&row.shown)),
            Paint::Plain => None,
        });
    }
    // Cells are made safe here, since the colour codes added next must reach the terminal.
    let table: Vec<Vec<String>> = table
        .into_iter()
        .map(|row| row.iter().map(|c| terminal(c).into_owned()).collect())
        .collect();
    out.push_str(&columns(&table, 2, &styles));
    let pending: Vec<_> = pending_requests(&state).into_iter().cloned().collect();
    if !pending.is_empty() {
        out.push_str(&format!(
            "\n{} pending request{} (answer with `troupe team approve|reject <id> [--reason …]`, or from `troupe team watch`):\n",
            pending.len(),
            if pending.len() == 1 { "" } else { "s" }
        ));
        out.push_str(&terminal(&requests_table(&pending, now)));
    }
    Ok(out)
}

/// `/team` in the REPL: the status view of [`human`] (in colour on a terminal) and the roster
/// with live usage, for the cost table under it.
pub async fn repl_view(store: &dyn TeamStore) -> Result<(String, troupe_protocol::Roster)> {
    let view = human(store, Paint::for_stdout()).await?;
    let roster = troupe_team::shared::roster_with_doing(store).await?;
    Ok((view, roster))
}

/// The JSON status: the roster (each member with its in-progress tasks, whether a live
/// process holds it, its shown status and the request it waits for), the lead's liveness, the
/// pending requests, the whole board and the team's usage.
pub async fn json(store: &dyn TeamStore) -> Result<Value> {
    let state = read_state(store).await?;
    let mut roster = state.roster.clone();
    // What a working member does now comes from presence, as in the human view.
    for m in &mut roster.members {
        m.activity = match m.status {
            AgentStatus::Working => state.doing.get(&m.name).cloned(),
            _ => None,
        };
    }
    let mut value = serde_json::to_value(&roster)?;
    if roster.lead.is_empty() {
        value["lead"] = json!(LEAD);
    }
    let mut total = Usage::default();
    let mut cost: Option<f64> = None;
    if let Some(members) = value.get_mut("members").and_then(Value::as_array_mut) {
        for (m, member) in members.iter_mut().zip(&state.roster.members) {
            let shown = shown_status(member, &state);
            let (word, waiting) = match &shown {
                Shown::Waiting { kind, id } => ("waiting", json!({"request_id": id, "kind": kind})),
                Shown::Gone(_) => ("gone", Value::Null),
                _ => (member.status.as_str(), Value::Null),
            };
            let held: Vec<Value> = troupe_team::board::tasks_of(&state.tasks, &member.name)
                .iter()
                .map(|t| json!({"id": t.id, "subject": t.subject}))
                .collect();
            let member_cost = agent_cost(
                price,
                member_model(member, &state.roster),
                &member.usage,
                &member.usage_by_model,
            );
            if let Some(c) = member_cost {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
            total.add(&member.usage);
            m["tasks"] = Value::Array(held);
            m["alive"] = json!(state.alive.contains(&member.name));
            m["live_status"] = json!(word);
            m["waiting_for"] = waiting;
            m["cost_usd"] = json!(member_cost);
            m["cache_hit_rate"] = json!(member.usage.cache_hit_rate());
        }
    }
    value["lead_alive"] = json!(state.alive.contains(LEAD));
    let pending: Vec<_> = state
        .requests
        .iter()
        .filter(|r| r.status == RequestStatus::Pending)
        .collect();
    value["requests"] = serde_json::to_value(pending)?;
    value["tasks"] = serde_json::to_value(&state.tasks)?;
    value["usage"] = json!({
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "cache_read_input_tokens": total.cache_read_input_tokens,
        "cache_creation_input_tokens": total.cache_creation_input_tokens,
        "total_tokens": total.total(),
        "cache_hit_rate": total.cache_hit_rate(),
        "cost_usd": cost,
    });
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_never_breaks_alignment() {
        let rows = vec![
            vec!["NAME".to_string(), "STATUS".into(), "X".into()],
            vec!["ann".to_string(), "working".into(), "a".into()],
            vec!["bo".to_string(), "idle".into(), "b".into()],
        ];
        let plain = columns(&rows, 1, &[None, None, None]);
        let (green, blue) = (
            ContentStyle::new().dark_green(),
            ContentStyle::new().dark_blue(),
        );
        let painted = columns(&rows, 1, &[None, Some(green), Some(blue)]);
        // The painted table shows the same text in the same cells, the status cells green and
        // blue and nothing after them.
        let mut screen = vt100::Parser::new(4, 40, 0);
        screen.process(painted.replace('\n', "\r\n").as_bytes());
        let screen = screen.screen();
        assert_eq!(screen.contents(), plain.trim_end());
        let cell = |row, col| screen.cell(row, col).map(vt100::Cell::fgcolor);
        assert_eq!(
            cell(1, 6),
            Some(vt100::Color::Idx(2)),
            "working: {painted:?}"
        );
        assert_eq!(cell(1, 12), Some(vt100::Color::Idx(2)));
        assert_eq!(
            cell(1, 13),
            Some(vt100::Color::Default),
            "the padding is plain"
        );
        assert_eq!(cell(2, 6), Some(vt100::Color::Idx(4)), "idle");
        assert_eq!(cell(2, 10), Some(vt100::Color::Default));
        assert_eq!(plain.lines().nth(2), Some("bo    idle     b"));
    }
}
