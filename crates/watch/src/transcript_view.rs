//! A teammate's transcript as the dashboard shows it: the last entries as short lines.

use crate::text::one_line;
use serde_json::Value;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// How many transcript lines a member's detail shows.
pub const TRANSCRIPT_LINES: usize = 60;

/// A teammate's transcript entries (JSON lines) as short display lines, the last `max`.
pub fn transcript_lines(entries: &[Value], max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for entry in entries {
        let Some(message) = entry.get("message") else {
            continue; // meta and boundary lines
        };
        let Ok(message) = serde_json::from_value::<ChatMessage>(message.clone()) else {
            continue;
        };
        let who = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text } if !text.trim().is_empty() => {
                    out.push(format!("{who}: {}", one_line(text.trim(), 200)));
                }
                ContentBlock::ToolUse { name, input, .. } => out.push(format!(
                    "  ⏺ {name}({})",
                    troupe_tools::summarize_input(name, input)
                )),
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => out.push(format!(
                    "    ⎿ {}{}",
                    if *is_error { "error: " } else { "" },
                    one_line(content.trim(), 160)
                )),
                _ => {}
            }
        }
    }
    let skip = out.len().saturating_sub(max);
    out.drain(..skip);
    out
}
