//! The requests pane: pending plan, permission and shutdown requests, oldest first, with who
//! asks whom, their age and what they are about. Enter shows one in full; `a`/`r` answer it.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;
use serde_json::Value;
use troupe_protocol::Request;

use super::{header_style, selected_style, table_state};
use crate::app::{App, Focus, Overlay};
use crate::model;
use crate::text::{age, one_line, short_id};
use crate::ui::pane_block;

/// What a request is about, in one line: the plan, the tool call, the shutdown reason.
pub fn gist(r: &Request) -> String {
    ["summary", "plan", "reason"]
        .iter()
        .find_map(|k| r.payload.get(*k).and_then(Value::as_str))
        .map_or_else(|| "-".to_string(), |t| one_line(t, 200))
}

/// Draws the pending requests into `area`.
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let pending = model::pending_requests(&app.state);
    let title = format!("2 Requests · {} pending", pending.len());
    let block = pane_block(app, title, Focus::Requests);
    if pending.is_empty() {
        let text = Line::from(Span::raw(" no pending requests"));
        frame.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let header = Row::new(["ID", "KIND", "FROM → TO", "AGE", "ABOUT"]).style(header_style());
    let rows: Vec<Row> = pending
        .iter()
        .map(|r| {
            Row::new(vec![
                Cell::from(short_id(&r.id)),
                Cell::from(r.kind.as_str()),
                Cell::from(one_line(&format!("{} → {}", r.from, r.to), 30)),
                Cell::from(age(app.now, r.created_at)),
                Cell::from(gist(r)),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(14),
        Constraint::Length(4),
        Constraint::Fill(1),
    ];
    let focused = app.focus == Focus::Requests && app.overlay == Overlay::None;
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .row_highlight_style(selected_style())
        .column_spacing(1);
    let mut state = table_state(app.selected(Focus::Requests), pending.len(), focused);
    frame.render_stateful_widget(table, area, &mut state);
}
