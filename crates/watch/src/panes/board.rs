//! The board pane: the tasks by status (in progress first), with owners and blockers.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;
use troupe_protocol::TaskStatus;
use troupe_team::board::render::{id_list, state};

use super::{header_style, selected_style, table_state};
use crate::app::{App, Focus, Overlay};
use crate::model;
use crate::text::one_line;
use crate::ui::pane_block;

/// Draws the board into `area`.
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let tasks = model::board_order(&app.state);
    let open = tasks.iter().filter(|t| !t.status.is_terminal()).count();
    let title = format!("3 Board · {} tasks, {open} open", tasks.len());
    let block = pane_block(app, title, Focus::Board);
    if tasks.is_empty() {
        let text = Line::from(Span::raw(" no tasks on the board"));
        frame.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let status = troupe_team::board::blocker_status(&app.state.tasks);
    let header = Row::new(["#", "STATUS", "OWNER", "BLOCKED BY", "SUBJECT"]).style(header_style());
    let rows: Vec<Row> = tasks
        .iter()
        .map(|t| {
            let colour = match t.status {
                TaskStatus::InProgress => Color::Green,
                TaskStatus::Pending => Color::Yellow,
                TaskStatus::Completed | TaskStatus::Cancelled => Color::DarkGray,
                TaskStatus::Failed => Color::Red,
            };
            Row::new(vec![
                Cell::from(t.id.to_string()),
                Cell::from(Span::styled(
                    state(t, &status),
                    app.colours.fg(Style::default(), colour),
                )),
                Cell::from(one_line(t.owner.as_deref().unwrap_or("-"), 16)),
                Cell::from(if t.blocked_by.is_empty() {
                    "-".to_string()
                } else {
                    id_list(&t.blocked_by)
                }),
                Cell::from(one_line(&t.subject, 120)),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(3),
        Constraint::Length(22),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Fill(1),
    ];
    let focused = app.focus == Focus::Board && app.overlay == Overlay::None;
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .row_highlight_style(selected_style())
        .column_spacing(1);
    let mut state = table_state(app.selected(Focus::Board), tasks.len(), focused);
    frame.render_stateful_widget(table, area, &mut state);
}
