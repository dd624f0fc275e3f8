//! The detail view that covers the panes — a member (its row in full, its requests, its last
//! report and recent transcript), a request in full (the whole plan, the tool call and its
//! input), a task, or one event with its data — and the input line for a reason or a
//! message.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;
use serde_json::Value;
use troupe_protocol::{Request, RequestKind, RequestStatus};
use troupe_team::protocols::answer::Verdict;

use crate::app::{App, Purpose, Target};
use crate::text::{age, clean, clock, lines, money, tokens};
use crate::ui::{centered, clear, status_style};

pub use crate::transcript_view::{transcript_lines, TRANSCRIPT_LINES};

fn bold(text: impl Into<String>) -> Span<'static> {
    Span::styled(text.into(), Style::default().add_modifier(Modifier::BOLD))
}

fn field(name: &str, value: impl Into<String>) -> Line<'static> {
    Line::from(vec![bold(format!("{name}: ")), Span::raw(value.into())])
}

fn text_lines(out: &mut Vec<Line<'static>>, text: &str, indent: &str) {
    for l in lines(text) {
        out.push(Line::from(format!("{indent}{l}")));
    }
}

fn member_lines(app: &App, name: &str) -> Vec<Line<'static>> {
    let rows = app.rows();
    let Some(row) = rows.iter().find(|r| r.name == name) else {
        return vec![Line::from(format!(
            "{} is no longer on the roster",
            clean(name)
        ))];
    };
    let mut out = vec![Line::from(vec![
        bold(clean(&row.name).into_owned()),
        Span::raw(format!(" · {} · ", clean(&row.role))),
        Span::styled(row.shown.label(), status_style(app.colours, &row.shown)),
    ])];
    if let Some(m) = app.state.roster.get(name) {
        out.push(field(
            "epoch · model · worktree",
            format!(
                "{} · {} · {}",
                m.epoch,
                clean(m.model.as_deref().unwrap_or("default")),
                clean(row.worktree.as_deref().unwrap_or("-"))
            ),
        ));
        out.push(field(
            "tokens",
            format!(
                "{} in · {} out · {} cache read · {} cache write · {} · cost {}",
                tokens(m.usage.input_tokens),
                tokens(m.usage.output_tokens),
                tokens(m.usage.cache_read_input_tokens),
                tokens(m.usage.cache_creation_input_tokens),
                m.usage.cache_label(),
                money(row.cost)
            ),
        ));
        let plan = match (m.require_plan, m.plan_approved) {
            (false, _) => "not required",
            (true, false) => "required, not approved yet",
            (true, true) => "approved",
        };
        out.push(field("plan", plan));
    }
    out.push(field(
        "last active",
        format!("{} ago", age(app.now, row.last_active)),
    ));
    out.push(field(
        "doing",
        clean(row.doing.as_deref().unwrap_or("-")).into_owned(),
    ));
    out.push(field(
        "task",
        clean(row.task.as_deref().unwrap_or("-")).into_owned(),
    ));
    let pending: Vec<&Request> = app
        .state
        .requests
        .iter()
        .filter(|r| r.status == RequestStatus::Pending && (r.from == name || r.to == name))
        .collect();
    for r in pending {
        out.push(field(
            "pending request",
            format!(
                "{} {} {} → {} ({} ago)",
                r.id,
                r.kind,
                r.from,
                r.to,
                age(app.now, r.created_at)
            ),
        ));
    }
    if let Some(report) = app
        .state
        .roster
        .get(name)
        .and_then(|m| m.last_report.clone())
    {
        out.push(bold("last report:").into());
        text_lines(&mut out, &report, "  ");
    }
    out.push(Line::from(""));
    out.push(bold("recent transcript:").into());
    match &app.transcript {
        Some((who, lines)) if who == name && !lines.is_empty() => {
            out.extend(lines.iter().map(|l| Line::from(clean(l).into_owned())));
        }
        Some((who, _)) if who == name => out.push(Line::from("  (empty)")),
        _ => out.push(Line::from("  (reading…)")),
    }
    out
}

fn request_lines(app: &App, id: &str) -> Vec<Line<'static>> {
    let Some(r) = app.state.requests.iter().find(|r| r.id == id) else {
        return vec![Line::from(format!(
            "request {} is not in the store",
            clean(id)
        ))];
    };
    let mut out = vec![
        Line::from(vec![
            bold(format!("{} request ", r.kind)),
            Span::raw(r.id.clone()),
        ]),
        field(
            "from → to",
            format!(
                "{} → {} (epoch {})",
                clean(&r.from),
                clean(&r.to),
                r.to_epoch
            ),
        ),
        field(
            "status",
            format!("{} · opened {} ago", r.status, age(app.now, r.created_at)),
        ),
    ];
    if let Some(at) = r.expires_at {
        let left = at.saturating_sub(app.now) / 1000;
        out.push(field(
            "expires",
            format!("at {} (in {}m {}s)", clock(at), left / 60, left % 60),
        ));
    }
    out.push(Line::from(""));
    match r.kind {
        RequestKind::Plan => {
            out.push(bold("plan:").into());
            text_lines(
                &mut out,
                r.payload.get("plan").and_then(Value::as_str).unwrap_or(""),
                "  ",
            );
        }
        RequestKind::Permission => {
            let tool = r.payload.get("tool").and_then(Value::as_str).unwrap_or("?");
            out.push(field("tool", clean(tool).into_owned()));
            if let Some(why) = r.payload.get("reason").and_then(Value::as_str) {
                out.push(field("asks because", clean(why).into_owned()));
            }
            out.push(bold("input:").into());
            let input = r.payload.get("input").cloned().unwrap_or(Value::Null);
            let pretty = serde_json::to_string_pretty(&input).unwrap_or_default();
            text_lines(&mut out, &pretty, "  ");
            // The text a command or file edit carries, readable rather than JSON-escaped.
            for key in ["command", "content", "new_string"] {
                if let Some(text) = input.get(key).and_then(Value::as_str) {
                    out.push(bold(format!("{key}:")).into());
                    text_lines(&mut out, text, "  ");
                }
            }
        }
        RequestKind::Shutdown => {
            let why = r
                .payload
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("(no reason given)");
            out.push(field("reason", clean(why).into_owned()));
        }
    }
    if let Some(resp) = &r.response {
        out.push(Line::from(""));
        out.push(field(
            "answer",
            format!(
                "{} by {}{}",
                if resp.approve { "approved" } else { "rejected" },
                clean(&resp.by),
                resp.reason
                    .as_deref()
                    .map(|x| format!(": {}", clean(x)))
                    .unwrap_or_default()
            ),
        ));
    }
    if r.status == RequestStatus::Pending {
        out.push(Line::from(""));
        out.push(Line::from(
            "a approves, r rejects (you are asked for a reason); the answer is recorded as yours.",
        ));
    }
    out
}

fn task_lines(app: &App, id: troupe_protocol::TaskId) -> Vec<Line<'static>> {
    match app.state.tasks.iter().find(|t| t.id == id) {
        Some(t) => {
            let status = troupe_team::board::blocker_status(&app.state.tasks);
            let text = troupe_team::board::render::task_detail(t, &status, app.now);
            lines(&text).into_iter().map(Line::from).collect()
        }
        None => vec![Line::from(format!("task {id} is not on the board"))],
    }
}

fn event_lines(event: &troupe_protocol::Event) -> Vec<Line<'static>> {
    let mut out = vec![
        field("time", clock(event.ts)),
        field(
            "agent",
            clean(event.agent.as_deref().unwrap_or("-")).into_owned(),
        ),
        field("kind", event.kind.as_str()),
        bold("detail:").into(),
    ];
    text_lines(&mut out, &event.detail, "  ");
    if !event.data.is_null() {
        out.push(bold("data:").into());
        text_lines(
            &mut out,
            &serde_json::to_string_pretty(&event.data).unwrap_or_default(),
            "  ",
        );
    }
    out
}

/// Draws the detail view of `target` over `area`.
pub fn render(frame: &mut Frame, area: Rect, app: &App, target: &Target, scroll: u16) {
    let (title, body) = match target {
        Target::Member(name) => (format!("member {}", clean(name)), member_lines(app, name)),
        Target::Request(id) => (format!("request {}", clean(id)), request_lines(app, id)),
        Target::Task(id) => (format!("task {id}"), task_lines(app, *id)),
        Target::Event(event) => ("event".to_string(), event_lines(event)),
    };
    let popup = centered(area, 92, 90);
    clear(frame, popup);
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" {title} "),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    frame.render_widget(
        Paragraph::new(body)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        popup,
    );
}

/// Draws the input line for `purpose` at the bottom of `area`.
pub fn render_input(frame: &mut Frame, area: Rect, app: &App, purpose: &Purpose, text: &str) {
    let [_, bottom] = Layout::vertical([Constraint::Min(0), Constraint::Length(3)]).areas(area);
    let title = match purpose {
        Purpose::Answer { id, verdict } => {
            let what = app
                .state
                .requests
                .iter()
                .find(|r| r.id == *id)
                .map(|r| format!("{} request {} of {}", r.kind, r.id, clean(&r.from)))
                .unwrap_or_else(|| format!("request {id}"));
            let verb = match verdict {
                Verdict::Approve => "Approve",
                Verdict::Reject => "Reject",
            };
            format!("{verb} {what} — reason (optional), Enter to send")
        }
        Purpose::Message { to } => format!("Message to {} — Enter to send", clean(to)),
    };
    clear(frame, bottom);
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" {title} "),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    let line = Line::from(vec![Span::raw(format!(" {}", clean(text))), Span::raw("▏")]);
    frame.render_widget(Paragraph::new(line).block(block), bottom);
}
