//! Drawing the dashboard: the title bar, the four panes (roster on top, requests and board
//! side by side, traffic below), an overlay (a detail view or an input line), the status line
//! and the keys. [`draw`] is a pure function of the [`App`], so any state can be rendered into
//! ratatui's `TestBackend` and compared as text.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use troupe_protocol::EventKind;

use crate::app::{App, Focus, Overlay, Phase, Target, Tone};
use crate::model::{self, MemberRow, Shown};
use crate::panes;
use crate::text::clean;

pub use crate::colours::Colours;

/// The style of a member's status.
pub fn status_style(colours: Colours, shown: &Shown) -> Style {
    let base = Style::default();
    match shown {
        Shown::Working => colours.fg(base, Color::Green),
        Shown::Idle => colours.fg(base, Color::Blue),
        Shown::Waiting { .. } => colours.fg(base.add_modifier(Modifier::BOLD), Color::Yellow),
        Shown::Shutdown => colours.fg(base, Color::DarkGray),
        Shown::Stopped => colours.fg(base, Color::Magenta),
        Shown::Failed | Shown::Gone(_) => colours.fg(base.add_modifier(Modifier::BOLD), Color::Red),
        Shown::LeadLive => colours.fg(base, Color::Green),
        Shown::LeadAbsent => colours.fg(base, Color::DarkGray),
    }
}

/// A short label and style for an event kind (the traffic pane's middle column).
pub fn event_label(colours: Colours, kind: EventKind) -> (&'static str, Style) {
    let base = Style::default();
    let (label, colour) = match kind {
        EventKind::MessageSent => ("mail", Color::Cyan),
        EventKind::MessageDelivered => ("delivered", Color::DarkGray),
        EventKind::CorruptMail => ("corrupt", Color::Red),
        EventKind::RequestOpened => ("request", Color::Yellow),
        EventKind::RequestResolved => ("answered", Color::Green),
        EventKind::RequestExpired => ("expired", Color::Red),
        EventKind::RequestCancelled => ("cancelled", Color::DarkGray),
        EventKind::StatusChanged => ("status", Color::Blue),
        EventKind::MemberSpawned => ("spawned", Color::Blue),
        EventKind::TurnStarted | EventKind::TurnEnded => ("turn", Color::DarkGray),
        EventKind::ToolCalled => ("tool", Color::DarkGray),
        EventKind::Error => ("error", Color::Red),
        EventKind::TeamSettled => ("settled", Color::Green),
        EventKind::TaskCreated | EventKind::TaskTransitioned | EventKind::TaskEdited => {
            ("task", Color::Magenta)
        }
        EventKind::WorktreeCreated
        | EventKind::WorktreeKept
        | EventKind::WorktreeRemoved
        | EventKind::WorktreeDiscarded => ("worktree", Color::Magenta),
        EventKind::HookRan => ("hook", Color::DarkGray),
        EventKind::Compacted => ("compacted", Color::DarkGray),
        EventKind::Other => ("other", Color::DarkGray),
    };
    (label, colours.fg(base, colour))
}

/// A pane's frame: its title, and a highlighted border when it has the focus.
pub fn pane_block(app: &App, title: String, focus: Focus) -> Block<'static> {
    let focused = app.focus == focus && app.overlay == Overlay::None;
    let border = if focused {
        app.colours
            .fg(Style::default().add_modifier(Modifier::BOLD), Color::Cyan)
    } else {
        Style::default()
    };
    let marker = if focused { "▶ " } else { "" };
    Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(format!(" {marker}{title} "), border))
}

/// Draws the whole dashboard.
pub fn draw(frame: &mut Frame, app: &App) {
    let [title, body, status, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    // Built once a frame: the title counts them, the roster shows them.
    let rows = app.rows();
    draw_title(frame, title, app, &rows);
    match &app.phase {
        Phase::Waiting(note) => draw_waiting(frame, body, app, note),
        Phase::Live => draw_panes(frame, body, app, &rows),
    }
    match &app.overlay {
        Overlay::None => {}
        Overlay::Detail { target, scroll } => {
            panes::detail::render(frame, body, app, target, *scroll)
        }
        Overlay::Input { purpose, text, .. } => {
            panes::detail::render_input(frame, body, app, purpose, text)
        }
    }
    draw_status(frame, status, app);
    draw_keys(frame, keys, app);
}

fn draw_title(frame: &mut Frame, area: Rect, app: &App, rows: &[MemberRow]) {
    let pending = model::pending_requests(&app.state).len();
    let summary = match app.phase {
        Phase::Live => model::summary(rows, pending, &app.state.tasks),
        Phase::Waiting(_) => "waiting for the team".to_string(),
    };
    let line = Line::from(vec![
        Span::styled(
            format!(" troupe · team {} ", clean(&app.team)),
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ),
        Span::raw(format!(" {summary}")),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_waiting(frame: &mut Frame, area: Rect, app: &App, note: &str) {
    let text = vec![
        Line::from(""),
        Line::from(Span::styled(
            format!("Waiting for team '{}' to exist.", clean(&app.team)),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(""),
        Line::from(clean(note).into_owned()),
        Line::from(""),
        Line::from(format!(
            "A lead creates it: `troupe --team {}`. The dashboard starts by itself; q quits.",
            clean(&app.team)
        )),
    ];
    let block = Block::default().borders(Borders::ALL).title(" waiting ");
    frame.render_widget(
        Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
        area,
    );
}

fn draw_panes(frame: &mut Frame, area: Rect, app: &App, rows: &[MemberRow]) {
    let members = app.state.roster.members.len() as u16 + 1;
    // The roster gets its rows (plus header and borders) up to 40% of the screen; the
    // requests and board share a band; the traffic takes the rest.
    let roster_h = (members + 3).min(area.height * 2 / 5).max(4);
    let listed = model::pending_requests(&app.state)
        .len()
        .max(app.state.tasks.len()) as u16;
    let room = area.height.saturating_sub(roster_h);
    let middle_h = (listed + 3).clamp(4, (room / 2).max(4));
    let [roster, middle, traffic] = Layout::vertical([
        Constraint::Length(roster_h),
        Constraint::Length(middle_h),
        Constraint::Min(3),
    ])
    .areas(area);
    let [requests, board] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(middle);
    panes::roster::render(frame, roster, app, rows);
    panes::requests::render(frame, requests, app);
    panes::board::render(frame, board, app);
    panes::traffic::render(frame, traffic, app);
}

fn draw_status(frame: &mut Frame, area: Rect, app: &App) {
    let line = match &app.flash {
        Some((Tone::Done, text)) => Line::from(Span::styled(
            format!(" ✓ {}", clean(text)),
            app.colours.fg(Style::default(), Color::Green),
        )),
        Some((Tone::Refused, text)) => Line::from(Span::styled(
            format!(" ✗ {}", clean(text)),
            app.colours
                .fg(Style::default().add_modifier(Modifier::BOLD), Color::Red),
        )),
        None => {
            let mut note = format!(" {} events seen", app.history.total);
            if app.history.corrupt > 0 {
                note.push_str(&format!(
                    " · {} corrupt event line(s) skipped",
                    app.history.corrupt
                ));
            }
            if app.state.corrupt_tasks > 0 {
                note.push_str(&format!(
                    " · {} unreadable task record(s) skipped",
                    app.state.corrupt_tasks
                ));
            }
            Line::from(Span::styled(
                note,
                Style::default().add_modifier(Modifier::DIM),
            ))
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_keys(frame: &mut Frame, area: Rect, app: &App) {
    let keys: &[(&str, &str)] = match (&app.phase, &app.overlay) {
        (Phase::Waiting(_), _) => &[("q", "quit")],
        (_, Overlay::Input { .. }) => &[("Enter", "send"), ("Esc", "cancel"), ("Ctrl-U", "clear")],
        (
            _,
            Overlay::Detail {
                target: Target::Request(_),
                ..
            },
        ) => &[
            ("Esc", "close"),
            ("↑↓", "scroll"),
            ("a", "approve"),
            ("r", "reject"),
        ],
        (
            _,
            Overlay::Detail {
                target: Target::Member(_),
                ..
            },
        ) => &[("Esc", "close"), ("↑↓", "scroll"), ("m", "message")],
        (_, Overlay::Detail { .. }) => &[("Esc", "close"), ("↑↓", "scroll")],
        (_, Overlay::None) => &[
            ("q", "quit"),
            ("Tab/1-4", "pane"),
            ("↑↓", "select"),
            ("Enter", "details"),
            ("a", "approve"),
            ("r", "reject"),
            ("m", "message"),
            ("End", "follow"),
        ],
    };
    let mut spans = vec![Span::raw(" ")];
    for (key, what) in keys {
        spans.push(Span::styled(
            (*key).to_string(),
            Style::default().add_modifier(Modifier::REVERSED),
        ));
        spans.push(Span::raw(format!(" {what}  ")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A rectangle of `percent_x` by `percent_y` of `area`, centred in it.
pub fn centered(area: Rect, percent_x: u16, percent_y: u16) -> Rect {
    let [_, mid, _] = Layout::vertical([
        Constraint::Percentage((100 - percent_y) / 2),
        Constraint::Percentage(percent_y),
        Constraint::Percentage((100 - percent_y) / 2),
    ])
    .areas(area);
    let [_, inner, _] = Layout::horizontal([
        Constraint::Percentage((100 - percent_x) / 2),
        Constraint::Percentage(percent_x),
        Constraint::Percentage((100 - percent_x) / 2),
    ])
    .areas(mid);
    inner
}

/// Clears `area` (for an overlay).
pub fn clear(frame: &mut Frame, area: Rect) {
    frame.render_widget(Clear, area);
}
