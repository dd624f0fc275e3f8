//! What the REPL's `/agents`, `/hooks` and `/resume` show: the agent definitions in force with
//! the file (or `--agents`) each came from, the hooks in force by event with the settings file
//! that defined each, and the numbered sessions of the workspace `/resume` picks from.

use crate::render::sanitize::{errln, out, outln};
use crate::term::{Input, LineReader, Printer};
use std::path::Path;
use troupe_agent::session::SessionSummary;
use troupe_agent::{Agent, SessionEndReason};
use troupe_catalog::agents::Definitions;
use troupe_settings::{Layer, Settings};

/// How many sessions `/resume` offers.
pub const RESUME_ROWS: usize = 20;

/// `/agents`: one row per definition — name, model, tools, where it came from — then the files
/// skipped and why.
pub fn agents(defs: &Definitions, workspace: &Path) -> String {
    if defs.agents.is_empty() && defs.skipped.is_empty() {
        return "no agent definitions (add them as .claude/agents/NAME.md or .troupe/agents/NAME.md, or pass --agents JSON)\n".to_string();
    }
    let mut rows = vec![[
        "NAME".to_string(),
        "MODEL".into(),
        "TOOLS".into(),
        "SOURCE".into(),
        "DESCRIPTION".into(),
    ]];
    for a in &defs.agents {
        rows.push([
            a.name.clone(),
            a.model.clone().unwrap_or_else(|| "(inherit)".into()),
            a.tools
                .as_ref()
                .map_or_else(|| "(all)".to_string(), |t| t.join(", ")),
            shown_path(&a.path, workspace),
            shorten(&a.description, 60),
        ]);
    }
    let mut out = table(&rows);
    for s in &defs.skipped {
        out.push_str(&format!(
            "skipped {}: {}\n",
            shown_path(&s.path, workspace),
            s.why
        ));
    }
    out
}

/// `/hooks`: the hooks in force, by event — matcher, command, timeout and the settings file
/// that defined each (the first layer holding the same entry).
pub fn hooks(settings: &Settings, layers: &[Layer]) -> String {
    if settings.hooks.values().all(Vec::is_empty) {
        return "no hooks configured (\"hooks\" in .claude/settings.json and the other settings files)\n".to_string();
    }
    let mut rows = vec![[
        "EVENT".to_string(),
        "MATCHER".into(),
        "COMMAND".into(),
        "TIMEOUT".into(),
        "FROM".into(),
    ]];
    for (event, matchers) in &settings.hooks {
        for m in matchers {
            for h in &m.hooks {
                let from = layers
                    .iter()
                    .find(|l| {
                        l.settings.hooks.get(event).is_some_and(|ms| {
                            ms.iter()
                                .any(|lm| lm.matcher == m.matcher && lm.hooks.contains(h))
                        })
                    })
                    .map_or_else(|| "(session)".to_string(), |l| l.origin.clone());
                rows.push([
                    event.clone(),
                    m.matcher
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "*".into()),
                    shorten(&h.command, 60),
                    h.timeout.map_or_else(|| "60s".into(), |t| format!("{t}s")),
                    from,
                ]);
            }
        }
    }
    table(&rows)
}

/// `/resume`: the sessions, newest first, numbered, the current one marked.
pub fn sessions(list: &[SessionSummary], current: Option<&str>) -> String {
    let mut rows = vec![[
        "#".to_string(),
        "ID".into(),
        "STARTED".into(),
        "TURNS".into(),
        "FIRST PROMPT".into(),
    ]];
    for (i, s) in list.iter().take(RESUME_ROWS).enumerate() {
        let mut prompt = s
            .first_prompt
            .as_deref()
            .map_or_else(String::new, |p| shorten(p, 50));
        if current == Some(s.id.as_str()) {
            prompt = format!("{prompt} (this session)").trim_start().to_string();
        }
        rows.push([
            (i + 1).to_string(),
            s.id.clone(),
            crate::commands::sessions::local_time(s.started_ms),
            s.turns.to_string(),
            prompt,
        ]);
    }
    table(&rows)
}

/// Which session an answer to the picker names: a number from the list, an id, or Enter for
/// the newest; `None` for anything else (q included).
pub fn chosen<'a>(answer: &str, list: &'a [SessionSummary]) -> Option<&'a SessionSummary> {
    let answer = answer.trim();
    let shown = &list[..list.len().min(RESUME_ROWS)];
    if answer.is_empty() {
        return shown.first();
    }
    if let Ok(n) = answer.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| shown.get(i));
    }
    list.iter().find(|s| s.id == answer)
}

/// `/resume [n|id]`: the workspace's sessions as a numbered list, the answer read at the
/// prompt (or given with the command), then the chosen conversation goes on here.
pub async fn resume(
    agent: &mut Agent,
    troupe_dir: &Path,
    arg: &str,
    reader: &mut LineReader,
    printer: &Printer,
) {
    let list = match troupe_agent::session::list_sessions(troupe_dir) {
        Ok(list) if !list.is_empty() => list,
        Ok(_) => return outln!("(no sessions in this workspace yet)"),
        Err(e) => return errln!("error: {e}"),
    };
    let current = agent
        .transcript_path()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    let answer = if arg.is_empty() {
        out!("{}", crate::repl_lists::sessions(&list, current.as_deref()));
        printer.styled("resume which session? [number or id, Enter for 1, q to cancel]");
        match reader.answer().await {
            Input::Line(line) => line,
            Input::Interrupted | Input::Eof => "q".to_string(),
        }
    } else {
        arg.to_string()
    };
    let Some(chosen) = crate::repl_lists::chosen(&answer, &list) else {
        return outln!("(no session resumed)");
    };
    if current.as_deref() == Some(chosen.id.as_str()) {
        return outln!("(already in session {})", chosen.id);
    }
    agent.end_session(SessionEndReason::Other).await;
    let path = troupe_agent::session::session_path(troupe_dir, &chosen.id);
    match agent.resume_from(&path) {
        Ok(n) => outln!("(resumed session {} · {n} messages)", chosen.id),
        Err(e) => errln!(
            "error: could not resume session {}: {e}; this conversation goes on",
            chosen.id
        ),
    }
}

fn shown_path(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Columns padded to their widest cell (display width), the last left ragged.
fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let mut widths = [0usize; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < N {
                line.push_str(&" ".repeat(widths[i] - width(cell) + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "repl_lists_tests.rs"]
mod tests;
