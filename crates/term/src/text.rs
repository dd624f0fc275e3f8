//! Human-readable rendering: streamed text, one line per tool call, retries and mail.

use std::io::Write;
use troupe_agent::AgentEvent;

/// Where text output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// The REPL: everything to stdout, streamed.
    Stdout,
    /// Headless `--verbose`: progress to stderr (stdout holds only the result).
    Stderr,
}

/// Writes model- and file-derived text with its control characters made visible.
fn write(sink: Sink, text: &str) {
    let text = super::sanitize::terminal(text);
    let result = match sink {
        Sink::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|_| out.flush())
        }
        Sink::Stderr => {
            let mut out = std::io::stderr().lock();
            out.write_all(text.as_bytes()).and_then(|_| out.flush())
        }
    };
    // Output to a closed terminal is not worth failing the agent's work over.
    let _ = result;
}

pub use troupe_tools::summarize_input;

/// Renders one event. `prefix` names the agent when it is not the lead.
pub fn render(sink: Sink, prefix: &str, event: &AgentEvent<'_>, stream_text: bool) {
    match event {
        AgentEvent::TextDelta(t) if stream_text => write(sink, t),
        AgentEvent::TextDelta(_) | AgentEvent::ThinkingDelta(_) | AgentEvent::Reply { .. } => {}
        AgentEvent::Assistant(message) => {
            if stream_text && !message.text().is_empty() {
                write(sink, "\n");
            } else if !stream_text && !message.text().is_empty() {
                write(sink, &format!("{prefix}{}\n", message.text()));
            }
        }
        AgentEvent::ToolStarted { name, input, .. } if *name == troupe_agent::todo::TOOL_NAME => {
            // The list itself, as it changes: a checklist is what a person wants to see.
            let items = input
                .get("todos")
                .cloned()
                .and_then(|v| serde_json::from_value::<Vec<troupe_agent::todo::TodoItem>>(v).ok())
                .unwrap_or_default();
            let list =
                troupe_agent::todo::checklist(&items).replace('\n', &format!("\n{prefix}  "));
            write(sink, &format!("{prefix}⏺ todo\n{prefix}  {list}\n"));
        }
        AgentEvent::ToolStarted { name, input, .. } => {
            write(
                sink,
                &format!("{prefix}⏺ {name}({})\n", summarize_input(name, input)),
            );
        }
        AgentEvent::ToolFinished {
            content, is_error, ..
        } => write(
            sink,
            &format!("{prefix}  {}\n", result_line(content, *is_error)),
        ),
        // Each result was shown as its call finished (a refusal's reason with it).
        AgentEvent::ToolResults(_) | AgentEvent::PermissionDenied(_) => {}
        AgentEvent::Retrying {
            attempt,
            wait_ms,
            reason,
        } => {
            write(
                sink,
                &format!(
                    "{prefix}… model call failed ({reason}); retry {attempt} in {:.1}s\n",
                    *wait_ms as f64 / 1000.0
                ),
            );
        }
        AgentEvent::Notice(text) => write(sink, &format!("{prefix}note: {text}\n")),
        AgentEvent::MailInjected { count, .. } => {
            write(
                sink,
                &format!("{prefix}✉ {count} new message(s) delivered\n"),
            );
        }
        AgentEvent::Compacted(c) => write(sink, &format!("{prefix}{}\n", compacted_line(c))),
    }
}

/// The one-line summary of a tool result: its first line, and how many more the output really
/// had — lines an omission marker stands for counted, the marker and bash's closing
/// `exit code: N` not (a non-zero code is named), and `(no output)` alone for none.
pub fn result_line(content: &str, is_error: bool) -> String {
    let mark = if is_error { "✗" } else { "⎿" };
    let mut lines: Vec<&str> = content
        .lines()
        .filter(|l| !(l.starts_with("[... ") && l.ends_with(" lines ...]")))
        .collect();
    let mut code = None;
    if let Some(last) = lines.last() {
        if let Some(n) = last.strip_prefix("exit code: ") {
            code = Some(n.trim().to_string());
            lines.pop();
        }
    }
    let code = match code.as_deref() {
        None | Some("0") => String::new(),
        Some(n) => format!(" (exit code {n})"),
    };
    let total = lines.len() as u64 + troupe_tools::output::omitted_lines(content);
    let Some(first) = lines.first().filter(|l| !l.trim().is_empty() || total > 1) else {
        return format!("{mark} (no output){code}");
    };
    match total.saturating_sub(1) {
        0 => format!("{mark} {first}{code}"),
        n => format!("{mark} {first} (+{n} lines){code}"),
    }
}

/// One line for a compaction.
pub fn compacted_line(c: &troupe_agent::Compaction) -> String {
    let why = match c.reason {
        troupe_agent::CompactReason::Requested => "as asked",
        troupe_agent::CompactReason::Threshold => "the context was nearly full",
        troupe_agent::CompactReason::PromptTooLong => "the provider refused the prompt as too long",
    };
    format!(
        "⟲ conversation compacted ({why}): {} → {} tokens; {} messages summarized, {} kept",
        c.tokens_before, c.tokens_after, c.summarized, c.kept
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_count_the_outputs_true_lines() {
        // `seq 1 20000` as bash returns it: head, omission marker, tail, exit code.
        let text: String = (1..=20_000).map(|n| format!("{n}\n")).collect();
        let mut content = troupe_tools::truncate_middle(&text, 30_000);
        content.push_str("exit code: 0");
        assert_eq!(result_line(&content, false), "⎿ 1 (+19999 lines)");
        assert_eq!(
            result_line("(no output)\nexit code: 0", false),
            "⎿ (no output)"
        );
        assert_eq!(result_line("", false), "⎿ (no output)");
        assert_eq!(
            result_line("boom\nexit code: 2", true),
            "✗ boom (exit code 2)"
        );
        assert_eq!(result_line("one\ntwo", false), "⎿ one (+1 lines)");
    }
}
