//! The traffic pane: messages and protocol events as they happen, newest at the bottom —
//! who wrote to whom, requests opened and answered with their ids — so a handshake can be
//! followed. It follows the log unless scrolled up (End follows again).

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use troupe_protocol::{Event, EventKind};

use super::selected_style;
use crate::app::{App, Focus, Overlay};
use crate::text::{clean, clock, one_line};
use crate::ui::{event_label, pane_block, Colours};

/// What an event says, for the traffic line: mail as "from → to [kind]: text", everything
/// else as its agent and detail.
pub fn event_text(event: &Event) -> String {
    let agent = event.agent.as_deref().unwrap_or("-");
    match event.kind {
        // The detail reads "kind → to: text"; shown as "from → to [kind]: text".
        EventKind::MessageSent => match event.detail.split_once(" → ") {
            Some((kind, rest)) => match rest.split_once(": ") {
                Some((to, text)) => format!("{agent} → {to} [{kind}]: {text}"),
                None => format!("{agent} → {rest} [{kind}]"),
            },
            None => format!("{agent}: {}", event.detail),
        },
        _ if event.detail.is_empty() => agent.to_string(),
        _ => format!("{agent} {}", event.detail),
    }
}

/// One traffic line.
pub fn event_line(colours: Colours, event: &Event, width: usize) -> Line<'static> {
    let (label, style) = event_label(colours, event.kind);
    let text = one_line(&event_text(event), width.saturating_sub(22).max(10));
    Line::from(vec![
        Span::styled(
            format!("{} ", clock(event.ts)),
            Style::default().add_modifier(Modifier::DIM),
        ),
        Span::styled(format!("{label:<9} "), style),
        Span::raw(clean(&text).into_owned()),
    ])
}

/// Draws the traffic into `area`.
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let h = &app.history;
    let height = usize::from(area.height.saturating_sub(2));
    let width = usize::from(area.width.saturating_sub(2));
    let end = h.len().saturating_sub(app.traffic_scroll);
    let start = end.saturating_sub(height);
    let focused = app.focus == Focus::Traffic && app.overlay == Overlay::None;
    let lines: Vec<Line> = (start..end)
        .filter_map(|i| h.get(i).map(|e| (i, e)))
        .map(|(i, e)| {
            let line = event_line(app.colours, e, width);
            if focused && i + 1 == end {
                line.style(selected_style())
            } else {
                line
            }
        })
        .collect();
    let where_ = if app.traffic_scroll == 0 {
        "following".to_string()
    } else {
        format!("scrolled up {}", app.traffic_scroll)
    };
    let title = format!("4 Traffic · {} events · {where_}", h.total);
    let body = if lines.is_empty() {
        vec![Line::from(" nothing has happened yet")]
    } else {
        lines
    };
    frame.render_widget(
        Paragraph::new(body).block(pane_block(app, title, Focus::Traffic)),
        area,
    );
}
