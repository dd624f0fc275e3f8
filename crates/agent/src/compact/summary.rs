//! The summary, the pipeline's third step: the model writes a summary of the work so far and
//! the conversation becomes that summary plus the most recent rounds. Pure functions: where to
//! cut, what the summarizing model is shown, and the message that opens the compacted
//! conversation.

use super::meter::message_tokens;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// The tag the compacted conversation's first message opens with (how a later compaction
/// recognises an earlier summary).
pub const SUMMARY_TAG: &str = "<compacted-conversation>";

/// The system prompt of the summarizing call.
pub const SUMMARY_SYSTEM: &str = "You summarize the work of a coding agent so that it can \
carry on after its conversation is compacted: the summary replaces everything before the most \
recent steps, which the agent will still see. Be specific and complete, terse and factual. \
Write plain Markdown, no preamble.";

/// Bytes of one tool result shown to the summarizing model (head and tail).
const RESULT_PREVIEW: usize = 600;
/// Bytes of one text block shown to the summarizing model (head and tail).
const TEXT_PREVIEW: usize = 4_000;

/// True when the conversation may be cut before message `index`: what follows then starts a
/// round (an assistant message) or a fresh prompt (a user message without tool results), so
/// no `tool_result` is separated from its `tool_use`.
pub fn is_cut(messages: &[ChatMessage], index: usize) -> bool {
    match messages.get(index) {
        Some(m) if m.role == Role::Assistant => true,
        Some(m) => !m
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. })),
        // Keeping nothing is a cut only after a finished answer (nothing is waiting for a result).
        None => messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && !m.has_tool_use()),
    }
}

/// Where to cut for a summary: the earliest cut whose tail (the messages kept verbatim) is
/// within `keep_tokens`, but always after the first message, so something is summarized;
/// `None` when no cut exists (a single message, or one round with nothing before it).
pub fn split_point(messages: &[ChatMessage], keep_tokens: u64) -> Option<usize> {
    let mut tail = 0u64;
    let mut best = None;
    for index in (1..=messages.len()).rev() {
        if index < messages.len() {
            tail += message_tokens(&messages[index]);
        }
        if !is_cut(messages, index) {
            continue;
        }
        if best.is_some() && tail > keep_tokens {
            break;
        }
        best = Some(index);
    }
    best
}

/// The earlier part of the conversation as text for the summarizing model, within about
/// `max_bytes`: an earlier summary whole, then each message in order, long texts and tool
/// results cut to their head and tail, thinking left out. When it does not fit, the oldest
/// entries after the earlier summary go first, and a line says how many.
pub fn render(messages: &[ChatMessage], max_bytes: usize) -> String {
    let mut entries: Vec<String> = Vec::with_capacity(messages.len());
    let mut names = std::collections::HashMap::new();
    for message in messages {
        for block in &message.content {
            let entry = match (message.role, block) {
                (Role::User, ContentBlock::Text { text }) if text.starts_with(SUMMARY_TAG) => {
                    format!("[earlier summary]\n{text}")
                }
                (Role::User, ContentBlock::Text { text }) => {
                    format!("[user]\n{}", cut(text, TEXT_PREVIEW))
                }
                (Role::Assistant, ContentBlock::Text { text }) => {
                    format!("[assistant]\n{}", cut(text, TEXT_PREVIEW))
                }
                (_, ContentBlock::ToolUse { id, name, input }) => {
                    names.insert(id.clone(), name.clone());
                    format!(
                        "[tool call] {name} {}",
                        cut(&input.to_string(), TEXT_PREVIEW)
                    )
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        ..
                    },
                ) => {
                    let name = names.get(tool_use_id).map_or("tool", String::as_str);
                    let what = if *is_error { "error" } else { "result" };
                    format!("[{name} {what}]\n{}", cut(content, RESULT_PREVIEW))
                }
                (_, ContentBlock::Image { source }) => {
                    format!("[image attached: {}]", source.media_type)
                }
                (_, ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }) => {
                    continue
                }
            };
            entries.push(entry);
        }
    }
    let keep_first = entries
        .first()
        .is_some_and(|e| e.starts_with("[earlier summary]"));
    let mut total: usize = entries.iter().map(|e| e.len() + 2).sum();
    let mut dropped = 0;
    let first_droppable = usize::from(keep_first);
    while total > max_bytes && entries.len() > first_droppable + 1 {
        total -= entries[first_droppable].len() + 2;
        entries.remove(first_droppable);
        dropped += 1;
    }
    let mut out = String::with_capacity(total + 80);
    for (i, entry) in entries.iter().enumerate() {
        if i == first_droppable && dropped > 0 {
            out.push_str(&format!(
                "[… {dropped} earlier entries left out to fit …]\n\n"
            ));
        }
        out.push_str(&cut(entry, max_bytes));
        out.push_str("\n\n");
    }
    out
}

/// The request text of the summarizing call: the rendered conversation, the todo list, what to
/// write, and the person's focus or a hook's instructions.
pub fn request_text(rendered: &str, todos: &str, focus: &str) -> String {
    let mut out = String::with_capacity(rendered.len() + 1_500);
    out.push_str("Here is the conversation of a coding agent so far:\n\n<conversation>\n");
    out.push_str(rendered);
    out.push_str("</conversation>\n\n");
    if !todos.is_empty() {
        out.push_str("Its todo list now:\n");
        out.push_str(todos);
        out.push_str("\n\n");
    }
    out.push_str(
        "Write the summary the agent will continue from, with these sections:\n\
         1. Goal — what the person asked for, in their words where it matters.\n\
         2. Decisions — what was decided and why, constraints learned.\n\
         3. Files — every file read, created or changed, with what matters about each.\n\
         4. Done — what has been completed and verified.\n\
         5. Open items — what remains, errors not yet solved, the todo list if there is one.\n\
         6. Next step — exactly what the agent was doing or about to do.\n",
    );
    if !focus.trim().is_empty() {
        out.push_str("\nFocus the summary on: ");
        out.push_str(focus.trim());
        out.push('\n');
    }
    out
}

/// The message that opens the compacted conversation: the summary, what extensions re-state
/// (identity, team, task), the todo list, and where the full history is.
pub fn head_message(summary: &str, restated: &[String], todos: &str, history: &str) -> ChatMessage {
    let mut text = String::with_capacity(summary.len() + 512);
    text.push_str(SUMMARY_TAG);
    text.push_str(
        "\nThe conversation so far was compacted to fit the context window. Summary of the work up to here:\n\n",
    );
    let summary = summary.trim();
    text.push_str(if summary.is_empty() {
        "(the model wrote no summary; read the recent steps below and the files you were working on)"
    } else {
        summary
    });
    text.push_str("\n</compacted-conversation>");
    for section in restated.iter().filter(|s| !s.trim().is_empty()) {
        text.push_str("\n\n");
        text.push_str(section.trim());
    }
    if !todos.is_empty() {
        text.push_str("\n\n<todo-list>\n");
        text.push_str(todos);
        text.push_str("\n</todo-list>");
    }
    if !history.is_empty() {
        text.push_str("\n\n");
        text.push_str(history);
    }
    text.push_str("\n\nContinue the work from where it stopped; the most recent steps follow.");
    ChatMessage::user_text(text)
}

/// `text` within about `max` bytes: its head and tail around a marker.
fn cut(text: &str, max: usize) -> String {
    troupe_tools::truncate_middle(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "read_file".into(),
                input: json!({"path": "src/lib.rs"}),
            }],
        }
    }

    fn result(id: &str, size: usize) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::tool_result(id, "r".repeat(size), false)],
        }
    }

    #[test]
    fn cuts_never_separate_a_result_from_its_call() {
        let messages = vec![
            ChatMessage::user_text("go"),
            call("a"),
            result("a", 10),
            call("b"),
            result("b", 10),
        ];
        assert!(!is_cut(&messages, 2) && !is_cut(&messages, 4));
        assert!(is_cut(&messages, 1) && is_cut(&messages, 3));
        assert!(!is_cut(&messages, 5), "a call waits for an answer");
        let mut answered = messages.clone();
        answered.push(ChatMessage::assistant_text("done"));
        assert!(is_cut(&answered, 6));
    }

    #[test]
    fn the_split_keeps_what_fits_and_summarizes_something() {
        let mut messages = vec![ChatMessage::user_text("go")];
        for i in 0..6 {
            let id = format!("t{i}");
            messages.push(call(&id));
            messages.push(result(&id, 4_000));
        }
        // Each round is about 1 000 tokens: a 2 500-token budget keeps two rounds.
        assert_eq!(split_point(&messages, 2_500), Some(9));
        // A budget smaller than one round still keeps the last round.
        assert_eq!(split_point(&messages, 10), Some(11));
        // Everything fits: the cut still summarizes the first message.
        assert_eq!(split_point(&messages, 1_000_000), Some(1));
        assert_eq!(split_point(&[ChatMessage::user_text("hi")], 10), None);
        assert_eq!(split_point(&messages[..3], 10), Some(1));
    }

    #[test]
    fn the_rendering_fits_and_keeps_an_earlier_summary() {
        let mut messages = vec![ChatMessage::user_text(format!(
            "{SUMMARY_TAG}\nold summary"
        ))];
        for i in 0..50 {
            let id = format!("t{i}");
            messages.push(call(&id));
            messages.push(result(&id, 5_000));
        }
        let text = render(&messages, 8_000);
        assert!(text.len() < 9_000, "{}", text.len());
        assert!(text.starts_with("[earlier summary]"));
        assert!(text.contains("old summary"));
        assert!(text.contains("earlier entries left out"));
        assert!(text.contains("[read_file result]"));
    }

    #[test]
    fn the_head_message_is_never_empty() {
        let head = head_message("  ", &["You are alice.".into()], "- [ ] test", "");
        let text = head.text();
        assert!(text.starts_with(SUMMARY_TAG));
        assert!(text.contains("wrote no summary"));
        assert!(text.contains("You are alice."));
        assert!(text.contains("- [ ] test"));
    }
}
