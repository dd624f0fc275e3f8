//! The output budget, the pipeline's first step: a tool result larger than the budget is saved
//! whole under the session's folder and replaced in the conversation by its head and tail, its
//! size, and the path to read the rest with `read_file`.

use super::meter::{block_tokens, text_tokens};
use std::path::{Path, PathBuf};
use troupe_protocol::{ChatMessage, ContentBlock};

/// Room left for the omission marker `truncate_middle` puts between head and tail (and a
/// newline), so a budgeted result stays within the budget and is never budgeted twice.
const MARKER_ROOM: usize = 120;

/// The smallest budget, whatever the window: below it a result shows too little to act on.
pub const MIN_OUTPUT_BUDGET: usize = 2_000;

/// The largest budget: the tools' own budget (30 000 bytes) keeps whole most outputs, and what
/// passes it (a long read, an MCP server's answer) is better read in pieces.
pub const MAX_OUTPUT_BUDGET: usize = 24_000;

/// The output budget in bytes for a window of `window` tokens: an eighth of it, within
/// [`MIN_OUTPUT_BUDGET`, `MAX_OUTPUT_BUDGET`].
pub fn output_budget(window: u64) -> usize {
    let eighth = window.saturating_mul(super::meter::BYTES_PER_TOKEN) / 8;
    usize::try_from(eighth)
        .unwrap_or(usize::MAX)
        .clamp(MIN_OUTPUT_BUDGET, MAX_OUTPUT_BUDGET)
}

/// Where whole tool results are kept: `<session folder>/tool-results/<tool_use_id>.txt`, shown
/// to the model relative to the workspace when it lies inside.
#[derive(Debug, Clone, Default)]
pub struct SpillDir {
    dir: Option<PathBuf>,
    workspace: PathBuf,
}

impl SpillDir {
    /// Results go under `session_dir` (none: nothing is kept, the notes say so); paths inside
    /// `workspace` are shown relative to it.
    pub fn new(session_dir: Option<PathBuf>, workspace: &Path) -> SpillDir {
        SpillDir {
            dir: session_dir.map(|d| d.join("tool-results")),
            workspace: workspace.to_path_buf(),
        }
    }

    /// The folder results are kept in, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Keeps `text`, the whole result of call `tool_use_id`, and returns where (as the model
    /// should name it). An existing file is kept: it already holds the whole text (a later
    /// copy may be a shortened one). `None` when there is no folder or it cannot be written
    /// (logged).
    pub fn save(&self, tool_use_id: &str, text: &str) -> Option<String> {
        let dir = self.dir.as_ref()?;
        let name: String = tool_use_id
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        let path = dir.join(format!("{name}.txt"));
        if !path.exists() {
            let written = std::fs::create_dir_all(dir).and_then(|()| {
                // Written under a temporary name and renamed: a reader never sees half of it.
                let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
                std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path))
            });
            if let Err(e) = written {
                tracing::warn!(path = %path.display(), error = %e, "could not keep a whole tool result");
                return None;
            }
        }
        Some(self.shown(&path))
    }

    /// Where a kept result of `tool_use_id` is (or would be), as the model should name it.
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Budgets every tool result of `messages[from..]` larger than `budget` bytes. Returns, for
/// each message changed, its index and the tokens it saved.
pub fn apply(
    messages: &mut [ChatMessage],
    from: usize,
    budget: usize,
    spill: &SpillDir,
) -> Vec<(usize, u64)> {
    let mut changed = Vec::new();
    for (index, message) in messages.iter_mut().enumerate().skip(from) {
        let mut saved = 0;
        for block in &mut message.content {
            let ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } = block
            else {
                continue;
            };
            if content.len() <= budget {
                continue;
            }
            let before = text_tokens(content);
            let kept = spill.save(tool_use_id, content);
            *content = shortened(content, budget, kept.as_deref());
            saved += before.saturating_sub(text_tokens(content));
        }
        if saved > 0 {
            changed.push((index, saved));
        }
    }
    changed
}

/// `text` cut to its head and tail within `budget` bytes, with a note on where the whole is.
fn shortened(text: &str, budget: usize, kept: Option<&str>) -> String {
    let note = match kept {
        Some(path) => format!(
            "[output budget: the whole result ({} bytes) is in {path}; read the part you need with read_file (offset, limit) or grep]",
            text.len()
        ),
        None => format!(
            "[output budget: the result was {} bytes; only its head and tail are kept]",
            text.len()
        ),
    };
    let keep = budget
        .saturating_sub(note.len() + MARKER_ROOM)
        .max(MIN_OUTPUT_BUDGET / 2);
    let mut out = troupe_tools::truncate_middle(text, keep);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&note);
    out
}

/// Tokens one block would save if replaced by `replacement` (for callers that stub).
pub fn saving(block: &ContentBlock, replacement: &ContentBlock) -> u64 {
    block_tokens(block).saturating_sub(block_tokens(replacement))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, text: &str) -> ChatMessage {
        ChatMessage {
            role: troupe_protocol::Role::User,
            content: vec![ContentBlock::tool_result(id, text, false)],
        }
    }

    #[test]
    fn budget_follows_the_window_within_bounds() {
        assert_eq!(output_budget(200_000), MAX_OUTPUT_BUDGET);
        assert_eq!(output_budget(1_000), MIN_OUTPUT_BUDGET);
        assert_eq!(output_budget(16_000), 8_000);
    }

    #[test]
    fn a_large_result_is_kept_whole_and_shown_by_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(Some(dir.path().join(".troupe/sessions/s1")), dir.path());
        let big = format!("HEAD\n{}\nTAIL", "x".repeat(50_000));
        let mut messages = vec![result("toolu_1", &big), result("toolu_2", "small")];
        let changed = apply(&mut messages, 0, 8_000, &spill);
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].0, 0);
        assert!(changed[0].1 > 10_000);
        let ContentBlock::ToolResult { content, .. } = &messages[0].content[0] else {
            panic!()
        };
        assert!(content.len() <= 8_000, "{}", content.len());
        assert!(content.starts_with("HEAD"));
        assert!(content.contains("TAIL"));
        assert!(
            content.contains(".troupe/sessions/s1/tool-results/toolu_1.txt"),
            "{content}"
        );
        let kept = std::fs::read_to_string(
            dir.path()
                .join(".troupe/sessions/s1/tool-results/toolu_1.txt"),
        )
        .unwrap();
        assert_eq!(kept, big);
        // Budgeting again changes nothing: the note fits in the budget.
        let again = messages.clone();
        assert!(apply(&mut messages, 0, 8_000, &spill).is_empty());
        assert_eq!(messages, again);
    }

    #[test]
    fn without_a_session_folder_the_note_says_the_rest_is_gone() {
        let spill = SpillDir::default();
        let mut messages = vec![result("a", &"y".repeat(10_000))];
        apply(&mut messages, 0, 3_000, &spill);
        let ContentBlock::ToolResult { content, .. } = &messages[0].content[0] else {
            panic!()
        };
        assert!(content.contains("only its head and tail are kept"));
    }
}
