//! Micro-compaction, the pipeline's second step: tool results older than the last few rounds
//! are replaced by a one-line stub naming the tool, its input and where the full text lives.
//! The calls themselves stay, so every `tool_use` keeps its `tool_result`.

use super::budget::{saving, SpillDir};
use std::collections::HashMap;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// How every stub starts; a result that starts so is not stubbed again.
pub const STUB_PREFIX: &str = "[compacted]";

/// Index of the first message of the last `keep` rounds (a round: an assistant message that
/// calls tools, and what follows it); 0 when there are no more rounds than that.
pub fn keep_from(messages: &[ChatMessage], keep: usize) -> usize {
    if keep == 0 {
        return messages.len();
    }
    let mut seen = 0;
    for (index, message) in messages.iter().enumerate().rev() {
        if message.role == Role::Assistant && message.has_tool_use() {
            seen += 1;
            if seen == keep {
                return index;
            }
        }
    }
    0
}

/// Stubs every tool result before message `before` that is not stubbed yet (and is longer than
/// its stub would be), keeping the whole text under `spill` first. Returns, for each message
/// changed, its index and the tokens it saved.
pub fn apply(messages: &mut [ChatMessage], before: usize, spill: &SpillDir) -> Vec<(usize, u64)> {
    let before = before.min(messages.len());
    // The calls the results answer, by id: their tool and input name the stub.
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut changed = Vec::new();
    for (index, message) in messages.iter_mut().enumerate().take(before) {
        if message.role == Role::Assistant {
            for (id, name, input) in message.tool_uses() {
                let summary = troupe_tools::summarize_input(name, input);
                calls.insert(id.to_string(), format!("{name}({summary})"));
            }
            continue;
        }
        let mut saved = 0;
        for block in &mut message.content {
            let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                images,
            } = &*block
            else {
                continue;
            };
            if content.starts_with(STUB_PREFIX) {
                continue;
            }
            let call = calls
                .get(tool_use_id.as_str())
                .map_or("a tool call", String::as_str);
            let whole = spill.save(tool_use_id, content);
            let text = stub(
                call,
                content.len(),
                images.len(),
                *is_error,
                whole.as_deref(),
            );
            if text.len() >= content.len() && images.is_empty() {
                continue;
            }
            let replacement = ContentBlock::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: text,
                is_error: *is_error,
                images: Vec::new(),
            };
            saved += saving(block, &replacement);
            *block = replacement;
        }
        if saved > 0 {
            changed.push((index, saved));
        }
    }
    changed
}

/// The one line that stands for an old result.
fn stub(call: &str, bytes: usize, images: usize, is_error: bool, whole: Option<&str>) -> String {
    let what = if is_error { "error result" } else { "result" };
    let images = match images {
        0 => String::new(),
        n => format!(" and {n} image(s)"),
    };
    match whole {
        Some(path) => format!(
            "{STUB_PREFIX} {what} of {call}: {bytes} bytes{images}, kept in {path} (read_file it if you need it again)"
        ),
        None => format!("{STUB_PREFIX} {what} of {call}: {bytes} bytes{images}, no longer shown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(id: &str, command: &str, output: &str) -> [ChatMessage; 2] {
        [
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.into(),
                    name: "bash".into(),
                    input: json!({"command": command}),
                }],
            },
            ChatMessage {
                role: Role::User,
                content: vec![ContentBlock::tool_result(id, output, false)],
            },
        ]
    }

    #[test]
    fn old_results_become_stubs_and_recent_rounds_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(Some(dir.path().join("s")), dir.path());
        let mut messages = vec![ChatMessage::user_text("go")];
        for i in 0..5 {
            messages.extend(round(
                &format!("t{i}"),
                &format!("cat f{i}"),
                &"o".repeat(2_000),
            ));
        }
        let cut = keep_from(&messages, 2);
        assert_eq!(cut, 7, "the fourth round starts at message 7");
        let changed = apply(&mut messages, cut, &spill);
        assert_eq!(
            changed.iter().map(|c| c.0).collect::<Vec<_>>(),
            vec![2, 4, 6]
        );
        let ContentBlock::ToolResult { content, .. } = &messages[2].content[0] else {
            panic!()
        };
        assert!(content.starts_with(STUB_PREFIX), "{content}");
        assert!(content.contains("bash(cat f0)"), "{content}");
        assert!(content.contains("s/tool-results/t0.txt"), "{content}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("s/tool-results/t0.txt")).unwrap(),
            "o".repeat(2_000)
        );
        let ContentBlock::ToolResult { content, .. } = &messages[8].content[0] else {
            panic!()
        };
        assert_eq!(content.len(), 2_000, "recent rounds are untouched");
        // Every call still has its result, and stubbing again changes nothing.
        let before = messages.clone();
        assert!(apply(&mut messages, cut, &spill).is_empty());
        assert_eq!(before, messages);
    }

    #[test]
    fn fewer_rounds_than_kept_changes_nothing() {
        let mut messages: Vec<ChatMessage> = round("a", "ls", &"x".repeat(900)).into();
        assert_eq!(keep_from(&messages, 3), 0);
        assert!(apply(&mut messages, 0, &SpillDir::default()).is_empty());
    }
}
