//! The roster pane: every member (the lead first) with role, status in colour, what it is
//! doing now, its task and worktree, tokens and cost, and the time since its last activity.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use super::{header_style, selected_style, table_state};
use crate::app::{App, Focus, Overlay};
use crate::model::MemberRow;
use crate::text::{age, money, one_line, tokens};
use crate::ui::{pane_block, status_style};

/// Draws the roster rows (see [`App::rows`]) into `area`.
pub fn render(frame: &mut Frame, area: Rect, app: &App, rows: &[MemberRow]) {
    let header = Row::new([
        "NAME", "ROLE", "STATUS", "DOING", "TASK", "WORKTREE", "TOKENS", "COST", "SEEN",
    ])
    .style(header_style());
    let body: Vec<Row> = rows
        .iter()
        .map(|r| {
            Row::new(vec![
                Cell::from(one_line(&r.name, 16)),
                Cell::from(one_line(&r.role, 20)),
                Cell::from(Line::from(Span::styled(
                    r.shown.label(),
                    status_style(app.colours, &r.shown),
                ))),
                Cell::from(one_line(r.doing.as_deref().unwrap_or("-"), 60)),
                Cell::from(one_line(r.task.as_deref().unwrap_or("-"), 40)),
                Cell::from(one_line(r.worktree.as_deref().unwrap_or("-"), 20)),
                Cell::from(r.tokens.map_or_else(|| "-".to_string(), tokens)),
                Cell::from(money(r.cost)),
                Cell::from(age(app.now, r.last_active)),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(12),
        Constraint::Length(14),
        Constraint::Length(20),
        Constraint::Fill(3),
        Constraint::Fill(2),
        Constraint::Length(10),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(4),
    ];
    let focused = app.focus == Focus::Roster && app.overlay == Overlay::None;
    let title = format!("1 Roster · {} members", rows.len().saturating_sub(1));
    let table = Table::new(body, widths)
        .header(header)
        .block(pane_block(app, title, Focus::Roster))
        .row_highlight_style(selected_style())
        .column_spacing(1);
    let mut state = table_state(app.selected(Focus::Roster), rows.len(), focused);
    frame.render_stateful_widget(table, area, &mut state);
}
