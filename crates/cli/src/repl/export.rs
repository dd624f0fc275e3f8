//! `/export`: the conversation as Markdown — to a file named after it (relative to the folder
//! troupe was started from), to `conversation-<date>.md` in the workspace without one, or to
//! the clipboard with `--clipboard` when a clipboard program is at hand.

use crate::render::sanitize::{errln, outln};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// Lines of a tool's result kept in the export.
const RESULT_LINES: usize = 20;

/// Runs `/export <arg>`.
pub(super) fn export(messages: &[ChatMessage], arg: &str, cwd: &Path, workspace: &Path) {
    if messages.is_empty() {
        return outln!("(nothing to export: the conversation is empty)");
    }
    let text = markdown(messages);
    if arg == "--clipboard" {
        return match to_clipboard(&text) {
            Some(program) => outln!("(conversation copied to the clipboard with {program})"),
            None => outln!(
                "(no clipboard program found: wl-copy, xclip or pbcopy; /export <file> writes it to a file)"
            ),
        };
    }
    let path = match arg {
        "" => workspace.join(format!(
            "conversation-{}.md",
            chrono::Local::now().format("%Y-%m-%d-%H%M%S")
        )),
        name => cwd.join(name),
    };
    match std::fs::write(&path, text) {
        Ok(()) => outln!("(conversation exported to {})", path.display()),
        Err(e) => errln!("error: could not write {}: {e}", path.display()),
    }
}

/// The conversation as Markdown: each prompt under `## You`, the agent's text under
/// `## Assistant`, tool calls with the start of their results.
pub fn markdown(messages: &[ChatMessage]) -> String {
    let mut out = String::from("# Conversation\n\n");
    let mut last: Option<&'static str> = None;
    for message in messages {
        for block in &message.content {
            let heading = match (message.role, block) {
                (Role::User, ContentBlock::Text { .. } | ContentBlock::Image { .. }) => "You",
                _ => "Assistant",
            };
            if last != Some(heading) {
                if !out.ends_with("\n\n") {
                    out.push('\n');
                }
                out.push_str(&format!("## {heading}\n\n"));
                last = Some(heading);
            }
            block_markdown(block, &mut out);
        }
    }
    out
}

fn block_markdown(block: &ContentBlock, out: &mut String) {
    match block {
        ContentBlock::Text { text } => {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
        ContentBlock::ToolUse { name, input, .. } => {
            out.push_str(&format!("**⏺ {name}**(`{}`)\n\n", summary(input)));
        }
        ContentBlock::ToolResult {
            content, is_error, ..
        } => {
            let lines: Vec<&str> = content.lines().collect();
            let fence = if content.contains("```") {
                "~~~~"
            } else {
                "```"
            };
            out.push_str(if *is_error { "error:\n" } else { "" });
            out.push_str(fence);
            out.push('\n');
            for line in lines.iter().take(RESULT_LINES) {
                out.push_str(line);
                out.push('\n');
            }
            if lines.len() > RESULT_LINES {
                out.push_str(&format!("… (+{} lines)\n", lines.len() - RESULT_LINES));
            }
            out.push_str(fence);
            out.push_str("\n\n");
        }
        ContentBlock::Image { source } => {
            out.push_str(&format!("*(an image, {})*\n\n", source.media_type));
        }
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
    }
}

/// A call's input on one line, cut short.
fn summary(input: &serde_json::Value) -> String {
    let text = match input.as_object() {
        Some(map) if map.len() == 1 => match map.values().next() {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        },
        _ => input.to_string(),
    };
    let line = text.lines().next().unwrap_or("").replace('`', "'");
    match line.chars().count() > 120 {
        true => format!("{}…", line.chars().take(119).collect::<String>()),
        false => line,
    }
}

/// Copies `text` with the first clipboard program found; its name, or `None`.
fn to_clipboard(text: &str) -> Option<&'static str> {
    let programs: [(&'static str, &[&str]); 3] = [
        ("wl-copy", &[]),
        ("xclip", &["-selection", "clipboard"]),
        ("pbcopy", &[]),
    ];
    for (program, args) in programs {
        let Ok(mut child) = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            continue;
        };
        let wrote = child
            .stdin
            .take()
            .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
        if child.wait().is_ok_and(|s| s.success()) && wrote {
            return Some(program);
        }
    }
    None
}
