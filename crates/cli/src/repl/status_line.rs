//! The settings' `statusLine` (`{"type": "command", "command": "…", "padding": 0}`), drawn
//! under the prompt as Claude Code draws it: the command gets the session as JSON on its stdin
//! and its first lines of output are shown, refreshed after each turn and at most every 300 ms
//! while the agent works. It runs beside the REPL: one that fails, prints nothing or takes more
//! than two seconds shows nothing, and the prompt never waits for it. The setting is trusted
//! with the workspace (a folder that is not trusted has none).

use super::Session;
use crate::term::Printer;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use troupe_agent::Agent;

/// How long the command may run.
const TIMEOUT: Duration = Duration::from_secs(2);
/// The shortest time between two runs while a turn runs.
const EVERY: Duration = Duration::from_millis(300);
/// Lines of output shown at most.
const LINES: usize = 3;

/// A configured status line.
pub(super) struct StatusLine {
    command: String,
    padding: usize,
    printer: Printer,
    /// What the command gets on stdin, as of the last turn's start or end.
    input: Value,
    started: Instant,
    last: Option<Instant>,
    running: Arc<AtomicBool>,
}

impl StatusLine {
    /// The status line `settings` configure, when they do and a terminal shows it.
    pub(super) fn of(settings: &troupe_settings::Settings, printer: &Printer) -> Option<Self> {
        let value = settings.other.get("statusLine")?;
        if !printer.is_live() || value.get("type").and_then(Value::as_str) != Some("command") {
            return None;
        }
        let command = value.get("command")?.as_str()?.trim().to_string();
        let padding = value.get("padding").and_then(Value::as_u64).unwrap_or(0);
        (!command.is_empty()).then(|| StatusLine {
            command,
            padding: usize::try_from(padding.min(40)).unwrap_or(0),
            printer: printer.clone(),
            input: Value::Null,
            started: Instant::now(),
            last: None,
            running: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Takes the session as it stands now, for the command's next runs.
    pub(super) async fn update(&mut self, agent: &Agent, session: &Session<'_>) {
        let config = &session.team.shared().config;
        let roster = session.team.roster().await.ok();
        let rows = super::costs(agent, session, roster.as_ref());
        let (_, cost) = crate::cost::totals(&rows);
        let transcript = agent.transcript_path();
        let id = transcript
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned());
        let model = &agent.config().model;
        let workspace = config.workspace.display().to_string();
        self.input = json!({
            "hook_event_name": "Status",
            "session_id": id,
            "transcript_path": transcript.map(|p| p.display().to_string()),
            "cwd": crate::repl_input::start_folder(&config.workspace).display().to_string(),
            "model": {"id": model, "display_name": display_name(model)},
            "workspace": {
                "current_dir": agent.tool_workspace().display().to_string(),
                "project_dir": workspace,
            },
            "version": env!("CARGO_PKG_VERSION"),
            "output_style": {"name": session.custom.style_name()},
            "cost": {
                "total_cost_usd": cost,
                "total_duration_ms": self.started.elapsed().as_millis() as u64,
                "total_api_duration_ms": agent.api_ms(),
                "total_lines_added": 0,
                "total_lines_removed": 0,
            },
        });
    }

    /// Runs the command (unless it is running, or ran less than 300 ms ago and `now` is not
    /// asked for); what it prints is drawn when it is done.
    pub(super) fn refresh(&mut self, now: bool) {
        if self.input.is_null() || self.running.load(Ordering::SeqCst) {
            return;
        }
        if !now && self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        self.running.store(true, Ordering::SeqCst);
        let (command, running, printer) = (
            self.command.clone(),
            self.running.clone(),
            self.printer.clone(),
        );
        // The clock goes on while a turn runs; the rest is as of the turn's start.
        self.input["cost"]["total_duration_ms"] = json!(self.started.elapsed().as_millis() as u64);
        let input = self.input.to_string();
        let pad = " ".repeat(self.padding);
        tokio::spawn(async move {
            let shown = run(&command, &input).await.map(|out| {
                out.lines()
                    .take(LINES)
                    .map(|l| format!("{pad}{}", l.trim_end()))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            printer.footer(shown.filter(|s| !s.trim().is_empty()));
            running.store(false, Ordering::SeqCst);
        });
    }
}

/// The command's output, when it succeeds within the time allowed.
async fn run(command: &str, input: &str) -> Option<String> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = input.to_string();
    let work = async move {
        let _ = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
        child.wait_with_output().await
    };
    let out = tokio::time::timeout(TIMEOUT, work).await.ok()?.ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A model's name as Claude Code shows it (`claude-sonnet-4-5` → `Sonnet 4.5`); others as
/// they are.
fn display_name(model: &str) -> String {
    for family in ["opus", "sonnet", "haiku"] {
        let Some(at) = model.find(family) else {
            continue;
        };
        let version: Vec<&str> = model[at + family.len()..]
            .split('-')
            .filter(|p| !p.is_empty() && p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit()))
            .collect();
        let mut name = family[..1].to_uppercase() + &family[1..];
        if !version.is_empty() {
            name = format!("{name} {}", version.join("."));
        }
        return name;
    }
    model.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn claude_models_are_named_as_claude_code_names_them() {
        assert_eq!(super::display_name("claude-sonnet-4-5"), "Sonnet 4.5");
        assert_eq!(super::display_name("claude-opus-4-1-20250805"), "Opus 4.1");
        assert_eq!(super::display_name("gpt-4o"), "gpt-4o");
    }
}
