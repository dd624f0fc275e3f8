//! What a turn looks like in the REPL: assistant text rendered as Markdown line by line as it
//! streams, each tool call printed with its result once it finishes (so parallel calls' results
//! sit under their own calls), mail as `✉ bob → lead: …`, and — on a terminal — a status line
//! above the prompt while the turn runs: a spinner with the elapsed time and the tokens so far,
//! or each running call with its time and its last output lines.

use super::markdown::Markdown;
use super::Printer;
use crate::sanitize::terminal;
use crossterm::style::Stylize;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use troupe_agent::AgentEvent;

/// Lines of a running command's output shown under it.
const TAIL: usize = 3;
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A tool call that is running.
struct Running {
    id: String,
    line: String,
    started: Instant,
    tail: VecDeque<String>,
    partial: String,
}

#[derive(Default)]
struct State {
    started: Option<Instant>,
    /// Output tokens of the replies so far this turn.
    tokens: u64,
    /// Characters streamed since the last reply (an estimate until its usage arrives).
    streamed: usize,
    /// Text streamed since the last complete line.
    partial: String,
    /// Whether the message being streamed had any text delta.
    any_delta: bool,
    markdown: Markdown,
    running: Vec<Running>,
    frame: usize,
    /// Since when a question has been waiting for the person (no call's clock runs meanwhile).
    asking_since: Option<Instant>,
}

/// The REPL's rendering of turns; cheap to clone (shared with the tools' progress reports).
#[derive(Clone)]
pub struct View {
    state: Arc<Mutex<State>>,
    printer: Printer,
    colour: bool,
    /// The agent whose turns these are (mail is addressed to it).
    agent: String,
}

impl View {
    /// A view printing through `printer` for `agent`.
    pub fn new(printer: Printer, colour: bool, agent: &str) -> View {
        let state = State {
            markdown: Markdown::new(colour),
            ..State::default()
        };
        View {
            state: Arc::new(Mutex::new(state)),
            printer,
            colour,
            agent: agent.to_string(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn dim(&self, text: &str) -> String {
        match self.colour {
            true => text.dim().to_string(),
            false => text.to_string(),
        }
    }

    /// A turn starts: the clock and the token count start from zero.
    pub fn begin(&self) {
        let mut s = self.state();
        s.started = Some(Instant::now());
        s.tokens = 0;
        s.streamed = 0;
    }

    /// The turn ended: what is left of the text is printed and the status line goes.
    pub fn end(&self) {
        self.flush_text();
        let mut s = self.state();
        s.started = None;
        s.running.clear();
        drop(s);
        self.printer.status(None);
    }

    /// A question waits for the person (`true`) or was answered (`false`): the running calls'
    /// clocks stop meanwhile, so their times never include the person's.
    pub fn asking(&self, waiting: bool) {
        let mut s = self.state();
        match (waiting, s.asking_since) {
            (true, None) => s.asking_since = Some(Instant::now()),
            (false, Some(since)) => {
                s.asking_since = None;
                let waited = since.elapsed();
                for run in s.running.iter_mut().filter(|r| r.started <= since) {
                    run.started += waited;
                }
            }
            _ => {}
        }
        drop(s);
        self.refresh();
    }

    /// Shows the status line now, the spinner a step on (called on a timer while the turn
    /// runs).
    pub fn tick(&self) {
        self.state().frame += 1;
        self.refresh();
    }

    /// Shows the status line as things stand (after a call started or ended).
    fn refresh(&self) {
        if self.printer.is_live() {
            let status = status_text(&self.state());
            self.printer.status(status);
        }
    }

    /// Output a running call produced (from the tools' progress reports).
    pub fn progress(&self, id: &str, bytes: &[u8]) {
        let mut s = self.state();
        let Some(run) = s.running.iter_mut().find(|r| r.id == id) else {
            return;
        };
        run.partial.push_str(&String::from_utf8_lossy(bytes));
        while let Some(end) = run.partial.find(['\n', '\r']) {
            let line: String = run.partial.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']).trim_end();
            if !line.is_empty() {
                run.tail.push_back(line.to_string());
                if run.tail.len() > TAIL {
                    run.tail.pop_front();
                }
            }
        }
    }

    /// Prints the complete lines of streamed text.
    fn text(&self, delta: &str) {
        let lines: Vec<String> = {
            let mut s = self.state();
            s.any_delta = true;
            s.streamed += delta.chars().count();
            s.partial.push_str(delta);
            let mut lines = Vec::new();
            while let Some(end) = s.partial.find('\n') {
                let line: String = s.partial.drain(..=end).collect();
                if let Some(rendered) = s.markdown.line(line.trim_end_matches(['\n', '\r'])) {
                    lines.push(rendered);
                }
            }
            lines
        };
        if !lines.is_empty() {
            self.printer.styled(&lines.join("\n"));
        }
    }

    /// Prints the last, unfinished line of streamed text, and a table still held.
    fn flush_text(&self) {
        let lines: Vec<String> = {
            let mut s = self.state();
            let rest = std::mem::take(&mut s.partial);
            let last = if rest.is_empty() {
                None
            } else {
                s.markdown.line(&rest)
            };
            last.into_iter().chain(s.markdown.finish()).collect()
        };
        if !lines.is_empty() {
            self.printer.styled(&lines.join("\n"));
        }
    }

    /// Renders one event of the turn.
    pub fn event(&self, event: &AgentEvent<'_>) {
        match event {
            AgentEvent::TextDelta(t) => self.text(t),
            AgentEvent::ThinkingDelta(_)
            | AgentEvent::ToolResults(_)
            | AgentEvent::PermissionDenied(_) => {}
            AgentEvent::Reply { usage, .. } => {
                let mut s = self.state();
                s.tokens += usage.output_tokens;
                s.streamed = 0;
            }
            AgentEvent::Assistant(message) => {
                self.flush_text();
                let whole = {
                    let mut s = self.state();
                    let unstreamed = !s.any_delta;
                    s.any_delta = false;
                    // flush_text above printed anything held.
                    let _ = s.markdown.reset();
                    unstreamed.then(|| message.text()).filter(|t| !t.is_empty())
                };
                if let Some(text) = whole {
                    self.text(&format!("{text}\n"));
                    self.state().any_delta = false;
                }
            }
            AgentEvent::ToolStarted { name, input, .. }
                if *name == troupe_agent::todo::TOOL_NAME =>
            {
                let items = input
                    .get("todos")
                    .cloned()
                    .and_then(|v| {
                        serde_json::from_value::<Vec<troupe_agent::todo::TodoItem>>(v).ok()
                    })
                    .unwrap_or_default();
                let list = troupe_agent::todo::checklist(&items).replace('\n', "\n  ");
                self.printer.line(&format!("⏺ todo\n  {list}"));
            }
            AgentEvent::ToolStarted { id, name, input } => {
                let line = format!("⏺ {name}({})", troupe_tools::summarize_input(name, input));
                if !self.printer.is_live() {
                    self.printer.line(&line);
                }
                self.state().running.push(Running {
                    id: id.to_string(),
                    line,
                    started: Instant::now(),
                    tail: VecDeque::new(),
                    partial: String::new(),
                });
                self.refresh();
            }
            AgentEvent::ToolFinished {
                id,
                name,
                content,
                is_error,
            } => {
                self.finished(id, name, content, *is_error);
                self.refresh();
            }
            AgentEvent::Retrying {
                attempt,
                wait_ms,
                reason,
            } => self.printer.styled(&self.dim(&format!(
                "… model call failed ({}); retry {attempt} in {:.1}s",
                terminal(reason),
                *wait_ms as f64 / 1000.0
            ))),
            AgentEvent::Notice(text) => self
                .printer
                .styled(&self.dim(&format!("note: {}", terminal(text)))),
            AgentEvent::MailInjected { text, .. } => {
                for line in super::mail::lines(text, &self.agent) {
                    self.printer.styled(&line);
                }
            }
            AgentEvent::Compacted(c) => self.printer.line(&crate::text::compacted_line(c)),
        }
    }

    /// A call ended: on a terminal its line is printed now, with the time it took, and under
    /// it the one-line summary of its result.
    fn finished(&self, id: &str, name: &str, content: &str, is_error: bool) {
        let run = {
            let mut s = self.state();
            let at = s.running.iter().position(|r| r.id == id);
            at.map(|i| s.running.remove(i))
        };
        if name == troupe_agent::todo::TOOL_NAME {
            return;
        }
        let result = terminal(&crate::text::result_line(content, is_error)).into_owned();
        let result = match (is_error, self.colour) {
            (true, true) => result.as_str().dark_red().to_string(),
            _ => self.dim(&result),
        };
        match run {
            Some(run) if self.printer.is_live() => {
                let took = run.started.elapsed();
                let time = match took >= Duration::from_secs(1) {
                    true => self.dim(&format!(" · {}", elapsed(took))),
                    false => String::new(),
                };
                let line = match self.colour {
                    true => terminal(&run.line).bold().to_string(),
                    false => terminal(&run.line).into_owned(),
                };
                self.printer.styled(&format!("{line}{time}\n  {result}"));
            }
            _ => self.printer.styled(&format!("  {result}")),
        }
    }

    /// The sink the agent sends its running calls' output to.
    pub fn progress_sink(&self) -> troupe_tools::ProgressSink {
        let view = self.clone();
        Arc::new(move |id: &str, bytes: &[u8]| view.progress(id, bytes))
    }
}

/// The status line: each running call with its time and last lines, or the spinner with the
/// turn's time and tokens; nothing between turns.
fn status_text(s: &State) -> Option<String> {
    let started = s.started?;
    let frame = FRAMES[s.frame % FRAMES.len()];
    if s.running.is_empty() {
        let tokens = s.tokens + (s.streamed / 4) as u64;
        return Some(format!(
            "{frame} Working… ({} · ↓ {tokens} tokens · Ctrl-C to interrupt)",
            elapsed(started.elapsed())
        ));
    }
    let mut lines = Vec::new();
    for run in s.running.iter().take(3) {
        let time = match s.asking_since {
            Some(since) if run.started <= since => {
                format!("{} · waiting for you", elapsed(since - run.started))
            }
            _ => elapsed(run.started.elapsed()),
        };
        lines.push(format!("{frame} {} ({time})", terminal(&run.line)));
        for tail in &run.tail {
            lines.push(format!("  │ {}", terminal(tail)));
        }
    }
    if s.running.len() > 3 {
        lines.push(format!("  … and {} more calls", s.running.len() - 3));
    }
    Some(lines.join("\n"))
}

/// `7s`, `2m 05s`.
fn elapsed(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        _ => format!("{}m {:02}s", secs / 60, secs % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_names_running_calls_with_their_last_lines() {
        let view = View::new(Printer::new(), false, "lead");
        view.begin();
        let status = status_text(&view.state()).unwrap();
        assert!(status.contains("Working… (0s · ↓ 0 tokens"), "{status}");
        view.state().running.push(Running {
            id: "c1".into(),
            line: "⏺ bash(cargo test)".into(),
            started: Instant::now(),
            tail: VecDeque::new(),
            partial: String::new(),
        });
        view.progress("c1", b"one\ntwo\nthree\nfour\nfi");
        let status = status_text(&view.state()).unwrap();
        assert_eq!(status.lines().count(), 4, "{status}");
        assert!(
            status.contains("⏺ bash(cargo test) (0s)") && status.ends_with("  │ four"),
            "{status}"
        );
        view.end();
        assert!(status_text(&view.state()).is_none());
        assert_eq!(elapsed(Duration::from_secs(125)), "2m 05s");
    }

    #[test]
    fn a_calls_clock_stops_while_a_question_waits_for_the_person() {
        let view = View::new(Printer::new(), false, "lead");
        view.begin();
        let now = Instant::now();
        // The call started 10 s ago; its question has waited for the last 4 s of them.
        view.state().running.push(Running {
            id: "c1".into(),
            line: "⏺ bash(touch x)".into(),
            started: now - Duration::from_secs(10),
            tail: VecDeque::new(),
            partial: String::new(),
        });
        view.state().asking_since = Some(now - Duration::from_secs(4));
        let status = status_text(&view.state()).unwrap();
        assert!(
            status.contains("⏺ bash(touch x) (6s · waiting for you)"),
            "{status}"
        );
        view.asking(false);
        let status = status_text(&view.state()).unwrap();
        assert!(status.contains("⏺ bash(touch x) (6s)"), "{status}");
    }
}
