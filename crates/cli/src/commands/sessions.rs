//! `troupe sessions [--json]`: the lead's sessions in this workspace, newest first — id, start,
//! first prompt, turns, cost — and the picker `--resume` without an id opens on a terminal.

use crate::args::SessionsArgs;
use crate::render::sanitize::{errln, json_line, out, outln, terminal};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use troupe_agent::session::{list_sessions, new_session_id, session_path, SessionSummary};
use troupe_protocol::Usage;

/// How many sessions the picker offers.
const PICKER_ROWS: usize = 20;

/// Runs `troupe sessions`; returns the exit code.
pub fn run(args: &SessionsArgs) -> Result<i32> {
    let workspace = crate::workspace::root(args.cwd.as_deref())?;
    let troupe_dir = workspace.join(".troupe");
    let sessions = list_sessions(&troupe_dir)?;
    if args.json {
        let list: Vec<Value> = sessions.iter().map(to_json).collect();
        println!("{}", json_line(&serde_json::to_string_pretty(&list)?));
    } else if sessions.is_empty() {
        outln!(
            "no sessions in {} yet (a run of troupe here starts one)",
            troupe_dir.display()
        );
    } else {
        out!("{}", table(&sessions, usize::MAX));
        outln!("\n`troupe --resume <id>` goes on with one; `troupe --continue` with the newest.");
    }
    Ok(0)
}

/// `--resume` without an id: a numbered list of the sessions on stderr and a prompt for the
/// number; without a terminal, an error saying to pass an id.
pub fn pick(troupe_dir: &Path) -> Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() || !std::io::stderr().is_terminal() {
        bail!("--resume needs a session id when troupe has no terminal to ask on: pass --resume <id> (`troupe sessions` lists them), or --continue for the newest");
    }
    let sessions = list_sessions(troupe_dir)?;
    if sessions.is_empty() {
        bail!(
            "no sessions in {} to resume: start one without --resume",
            troupe_dir.display()
        );
    }
    let shown = sessions.len().min(PICKER_ROWS);
    let mut err = std::io::stderr();
    let _ = write!(err, "{}", table(&sessions, shown));
    let mut line = String::new();
    loop {
        let _ = write!(
            err,
            "resume which session? [1-{shown}, Enter for 1, q to quit] "
        );
        let _ = err.flush();
        line.clear();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .context("reading the answer")?;
        let answer = line.trim();
        if read == 0 || answer == "q" {
            bail!("no session picked");
        }
        let index = if answer.is_empty() {
            Some(1)
        } else {
            answer.parse::<usize>().ok()
        };
        match index {
            Some(n) if (1..=shown).contains(&n) => return Ok(sessions[n - 1].id.clone()),
            _ => {
                let _ = writeln!(err, "(a number from 1 to {shown}, please)");
            }
        }
    }
}

/// `/clear`: ends the session (its hooks run), then goes on in a new one, so `--continue`
/// never brings the cleared messages back; the old one stays, for `--resume <id>`.
pub async fn clear(agent: &mut troupe_agent::Agent, troupe_dir: &Path) {
    agent
        .end_session(troupe_agent::SessionEndReason::Clear)
        .await;
    let id = new_session_id();
    match agent.clear_into(&session_path(troupe_dir, &id)) {
        Ok(()) => outln!("(conversation cleared · new session {id})"),
        Err(e) => errln!("error: could not start a new session, the conversation stays: {e}"),
    }
}

/// The sessions as a table, the first `rows` of them, numbered.
fn table(sessions: &[SessionSummary], rows: usize) -> String {
    let mut lines = vec![[
        "#".to_string(),
        "ID".into(),
        "STARTED".into(),
        "TURNS".into(),
        "COST".into(),
        "FIRST PROMPT".into(),
    ]];
    for (i, s) in sessions.iter().take(rows).enumerate() {
        let prompt = match (&s.first_prompt, s.answered) {
            (Some(p), true) => shorten(p, 60),
            (Some(p), false) => format!("{} (no answer)", shorten(p, 48)),
            (None, _) if s.cleared_from.is_some() => "(cleared; nothing yet)".into(),
            (None, _) => String::new(),
        };
        lines.push([
            (i + 1).to_string(),
            s.id.clone(),
            local_time(s.started_ms),
            s.turns.to_string(),
            cost_text(s),
            terminal(&prompt).into_owned(),
        ]);
    }
    troupe_team::render::columns(&lines)
}

/// Cost in USD of a session's tokens (`None` when no model of it has a known price).
fn cost(s: &SessionSummary) -> Option<f64> {
    s.usage
        .iter()
        .filter_map(|(model, usage)| crate::cost::known_cost_usd(model, usage))
        .reduce(|a, b| a + b)
}

fn cost_text(s: &SessionSummary) -> String {
    match cost(s) {
        Some(usd) => format!("${usd:.4}"),
        None if s.usage.is_empty() => "-".into(),
        None => format!("{} tok", total(s).total()),
    }
}

/// All the session's tokens.
fn total(s: &SessionSummary) -> Usage {
    let mut sum = Usage::default();
    for (_, usage) in &s.usage {
        sum.add(usage);
    }
    sum
}

fn to_json(s: &SessionSummary) -> Value {
    json!({
        "id": s.id,
        "started_ms": s.started_ms,
        "started": chrono::DateTime::from_timestamp_millis(s.started_ms as i64)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "modified_ms": s.modified_ms,
        "first_prompt": s.first_prompt,
        "turns": s.turns,
        "usage": total(s),
        "models": s.usage.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>(),
        "cost_usd": cost(s),
        "answered": s.answered,
        "cleared_from": s.cleared_from,
    })
}

/// `ms` as local date and time to the minute.
pub(crate) fn local_time(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_default()
}

/// `text` cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
