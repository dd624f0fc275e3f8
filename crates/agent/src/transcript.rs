//! Persisted conversations: one JSON line per message, append-only, repaired on load so that a
//! killed run never leaves a tool_use without its tool_result.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use troupe_durable::commit::{self, SyncKind};
use troupe_durable::jsonl;
use troupe_durable::DurableError;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// Text of the synthetic tool_result written for a call that never finished.
pub const INTERRUPTED: &str = "error: interrupted — the call did not finish (the run was stopped or killed). Check the workspace state before retrying.";

/// One line of a transcript file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// Written once when the transcript is created.
    Meta {
        /// Session or agent id the file belongs to.
        id: String,
        /// Agent name.
        agent: String,
        /// Workspace root.
        cwd: String,
        /// Milliseconds since the Unix epoch.
        ts: u64,
        /// The session this one was started from by `/clear`: a deliberate fresh start, which
        /// `--continue` resumes even before its first model answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cleared_from: Option<String>,
    },
    /// A conversation message.
    Message {
        /// The message.
        message: ChatMessage,
        /// Team mail ids this message carries (inbox injection), for de-duplication on re-delivery.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mail_ids: Vec<String>,
        /// Milliseconds since the Unix epoch.
        ts: u64,
        /// For a model's reply: the tokens it used (`troupe sessions` adds them up). Copies
        /// of replies a compaction writes carry none, so nothing is counted twice.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<troupe_protocol::Usage>,
        /// For a model's reply: the model that wrote it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The conversation restarts here: loading keeps only what follows the last boundary.
    Boundary {
        /// Why it restarted.
        kind: Boundary,
        /// Milliseconds since the Unix epoch.
        ts: u64,
        /// For a compaction: what it did, and the todo list it carried over.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compact: Option<CompactMark>,
    },
}

/// What a compaction boundary records. The messages after it (the summary, then the recent
/// rounds) are the compacted conversation; everything before it stays in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactMark {
    /// Why it was compacted (`requested`, `threshold`, `prompt_too_long`).
    pub reason: String,
    /// Tokens of the context before.
    pub tokens_before: u64,
    /// Tokens of the context after (estimated).
    pub tokens_after: u64,
    /// The todo list at that moment: the `todo_write` call that set it may have been
    /// summarized away, so `--continue` restores it from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<crate::todo::TodoItem>,
}

/// Why a conversation restarted at a transcript boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// `/clear`: the person started a fresh conversation.
    Clear,
    /// The conversation was compacted: what follows is the summary and the recent rounds.
    Compact,
    /// `/rewind`: what follows is the conversation as it was before a prompt.
    Rewind,
}

/// Errors reading or writing a transcript.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read or written.
    #[error("transcript {path}: {source}")]
    Io {
        /// The transcript file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file could not be read back (the JSON-lines reader names the file).
    #[error("transcript: {0}")]
    Read(#[from] DurableError),
    /// The lines were synced to the file but not kept by the transcript's mirror (they are
    /// handed over again at the next sync).
    #[error("transcript {path}: synced here, but could not be kept beyond this machine: {source}")]
    Mirror {
        /// The transcript file.
        path: PathBuf,
        /// What the mirror said.
        source: crate::transcript_mirror::MirrorError,
    },
}

/// What loading a transcript found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Messages in order, repaired.
    pub messages: Vec<ChatMessage>,
    /// Mail ids already delivered into this conversation.
    pub mail_ids: HashSet<String>,
    /// Lines that could not be parsed (skipped).
    pub corrupt_lines: usize,
    /// Synthetic tool results appended to close dangling tool calls.
    pub repaired_calls: usize,
    /// The last compaction boundary's record, when the conversation starts at one.
    pub compacted: Option<CompactMark>,
}

/// An append-only transcript file.
#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    file: File,
    /// Lines written so far (by this handle).
    written: u64,
    /// Of those, the first `synced` are known to be durable.
    synced: u64,
    /// Where synced lines go next, when the transcript is kept beyond this file.
    mirror: Option<crate::transcript_mirror::Pending>,
}

/// A sync handed to the group commit by [`Transcript::start_sync`], not yet waited for.
#[derive(Debug)]
pub struct StartedSync {
    ticket: commit::Ticket,
    /// The lines it makes durable: all those written before it started.
    covers: u64,
}

impl StartedSync {
    /// Blocks until the sync has returned (off the tokio worker, as every commit wait), and
    /// says how it went, for [`Transcript::finish_sync`].
    pub fn wait(self) -> SyncOutcome {
        SyncOutcome {
            result: self.ticket.wait(),
            covers: self.covers,
        }
    }
}

/// How a [`StartedSync`] went.
#[derive(Debug)]
pub struct SyncOutcome {
    result: Result<(), DurableError>,
    covers: u64,
}

/// Milliseconds since the Unix epoch (troupe's one clock).
pub use troupe_protocol::now_ms;

impl Transcript {
    /// Opens (creating if needed) the transcript at `path` for appending.
    pub fn open(path: &Path) -> Result<Transcript, TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        // A run killed mid-line (or a full disk) leaves a torn last line; our next line must
        // not be glued to it, or it would be lost too.
        jsonl::seal_torn_tail(&file, path)?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
            written: 0,
            synced: 0,
            mirror: None,
        })
    }

    /// Hands every line synced from now on to `mirror` as well (see
    /// [`crate::transcript_mirror::TranscriptMirror`]).
    pub fn mirrored(
        mut self,
        mirror: Option<std::sync::Arc<dyn crate::transcript_mirror::TranscriptMirror>>,
    ) -> Transcript {
        self.mirror = mirror.map(crate::transcript_mirror::Pending::new);
        self
    }

    /// The file this transcript lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line and syncs it (and every line written before it) to disk, so that what
    /// follows may rely on it.
    pub fn append(&mut self, line: &Line) -> Result<(), TranscriptError> {
        self.write(line)?;
        self.sync()
    }

    /// Appends one line without syncing it: the agent syncs once at the end of each model
    /// round ([`Transcript::sync`]), and before anything that relies on the lines (a mailbox
    /// acknowledged after its mail was written).
    pub fn write(&mut self, line: &Line) -> Result<(), TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: self.path.clone(),
            source,
        };
        let mut text = serde_json::to_string(line)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        text.push('\n');
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.written += 1;
        if let Some(mirror) = self.mirror.as_mut() {
            mirror.push(text.as_bytes());
        }
        Ok(())
    }

    /// Syncs what was written since the last sync to disk; nothing to do when nothing was
    /// written. A mirror gets the lines at the next [`Transcript::sync_and_mirror`].
    pub fn sync(&mut self) -> Result<(), TranscriptError> {
        if self.synced < self.written {
            let covers = self.written;
            // Synced through the process's group commit: the transcripts of many agents
            // appending at once share one batch of syncs, and a tokio worker is not held
            // while it runs.
            commit::global().sync(self.handle()?, &self.path, SyncKind::Data)?;
            self.synced = self.synced.max(covers);
        }
        Ok(())
    }

    /// Syncs what was written (as [`Transcript::sync`]), then hands every synced line the
    /// mirror has not kept yet to it, if there is one.
    pub async fn sync_and_mirror(&mut self) -> Result<(), TranscriptError> {
        self.sync()?;
        let Some(pending) = self.mirror.as_mut() else {
            return Ok(());
        };
        pending
            .flush()
            .await
            .map_err(|source| TranscriptError::Mirror {
                path: self.path.clone(),
                source,
            })
    }

    /// Whether the lines go to a mirror too.
    pub fn is_mirrored(&self) -> bool {
        self.mirror.is_some()
    }

    /// Hands what was written so far to the group commit without waiting for the sync: the
    /// caller waits for it ([`StartedSync::wait`]) beside other work, and reports the outcome
    /// to [`Transcript::finish_sync`]. Until then the lines count as not durable, so a
    /// [`Transcript::sync`] meanwhile (or after the started one was dropped) covers them
    /// again. `None` when there is nothing to sync, or when a mirror waits for the lines: the
    /// transcript is then synced at once, as [`Transcript::sync`], and the caller hands the
    /// lines to the mirror ([`Transcript::sync_and_mirror`]).
    pub fn start_sync(&mut self) -> Result<Option<StartedSync>, TranscriptError> {
        if self.mirror.is_some() || self.synced == self.written {
            self.sync()?;
            return Ok(None);
        }
        let ticket = commit::global().submit(self.handle()?, &self.path, SyncKind::Data);
        Ok(Some(StartedSync {
            ticket,
            covers: self.written,
        }))
    }

    /// Takes in how a started sync went: its lines are durable, or its error is returned.
    pub fn finish_sync(&mut self, outcome: SyncOutcome) -> Result<(), TranscriptError> {
        outcome.result?;
        self.synced = self.synced.max(outcome.covers);
        Ok(())
    }

    /// A second handle on the transcript's file, for the group commit.
    fn handle(&self) -> Result<File, TranscriptError> {
        self.file.try_clone().map_err(|source| TranscriptError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Appends a message line (not synced: see [`Transcript::write`]).
    pub fn append_message(
        &mut self,
        message: &ChatMessage,
        mail_ids: &[String],
    ) -> Result<(), TranscriptError> {
        self.write(&Line::Message {
            message: message.clone(),
            mail_ids: mail_ids.to_vec(),
            ts: now_ms(),
            usage: None,
            model: None,
        })
    }

    /// Appends a model's reply with the tokens it used and the model that wrote it (not
    /// synced: see [`Transcript::write`]).
    pub fn append_reply(
        &mut self,
        message: &ChatMessage,
        usage: &troupe_protocol::Usage,
        model: &str,
    ) -> Result<(), TranscriptError> {
        self.write(&Line::Message {
            message: message.clone(),
            mail_ids: Vec::new(),
            ts: now_ms(),
            usage: Some(*usage),
            model: Some(model.to_string()),
        })
    }

    /// Appends a boundary: the conversation a later load restores starts after it.
    pub fn append_boundary(&mut self, kind: Boundary) -> Result<(), TranscriptError> {
        self.append(&Line::Boundary {
            kind,
            ts: now_ms(),
            compact: None,
        })
    }

    /// Appends a compaction: its boundary, then the compacted conversation, each line synced.
    /// A load after a crash in between finds the boundary and the messages written so far;
    /// the summary is written first, so it never finds the recent rounds without it.
    pub fn append_compaction(
        &mut self,
        mark: CompactMark,
        messages: &[ChatMessage],
    ) -> Result<(), TranscriptError> {
        self.append(&Line::Boundary {
            kind: Boundary::Compact,
            ts: now_ms(),
            compact: Some(mark),
        })?;
        for message in messages {
            self.append_message(message, &[])?;
            self.sync()?;
        }
        Ok(())
    }

    /// Reads a transcript from its last boundary on, skipping corrupt lines and closing dangling tool calls in memory.
    /// Call [`repair_tail`] and persist its result to make the repair durable.
    pub fn load(path: &Path) -> Result<Loaded, TranscriptError> {
        // Bytes, not text: a line torn inside a multi-byte character is one skipped line,
        // reported by the reader, never a transcript that cannot be loaded.
        let log = jsonl::read_log::<Line>(path, "transcript")?;
        let mut loaded = Loaded {
            corrupt_lines: log.corrupt.len(),
            ..Loaded::default()
        };
        for line in log.entries {
            match line {
                Line::Message {
                    message, mail_ids, ..
                } => {
                    loaded.mail_ids.extend(mail_ids);
                    loaded.messages.push(message);
                }
                // Mail ids stay: mail delivered before the boundary must not come back.
                Line::Boundary { compact, .. } => {
                    loaded.messages.clear();
                    loaded.compacted = compact;
                }
                Line::Meta { .. } => {}
            }
        }
        Ok(loaded)
    }
}

/// Closes tool calls left without results (a run killed mid-round): returns the user message
/// of synthetic error results to append, or `None` when the conversation is whole.
pub fn repair_tail(messages: &[ChatMessage]) -> Option<ChatMessage> {
    let (idx, last_assistant) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)?;
    let answered: HashSet<&str> = messages[idx + 1..]
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let missing: Vec<ContentBlock> = last_assistant
        .tool_uses()
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, _, _)| ContentBlock::tool_result(id, INTERRUPTED, true))
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(ChatMessage {
            role: Role::User,
            content: missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dangling_tool_use_is_closed_and_corrupt_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.append_message(&ChatMessage::user_text("hi"), &["m1".into()])
            .unwrap();
        let call = ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "a".into(),
                name: "bash".into(),
                input: json!({}),
            }],
        };
        t.append_message(&call, &[]).unwrap();
        drop(t);
        let mut raw = std::fs::read_to_string(&path).unwrap();
        raw.push_str("{not json\n");
        std::fs::write(&path, raw).unwrap();

        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(loaded.corrupt_lines, 1);
        assert!(loaded.mail_ids.contains("m1"));
        let fix = repair_tail(&loaded.messages).unwrap();
        assert_eq!(
            fix.content,
            vec![ContentBlock::tool_result("a", INTERRUPTED, true)]
        );

        let mut whole = loaded.messages.clone();
        whole.push(fix);
        assert!(repair_tail(&whole).is_none());
    }

    #[test]
    fn loading_starts_after_the_last_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.append_message(&ChatMessage::user_text("before"), &["m1".into()])
            .unwrap();
        t.append_boundary(Boundary::Clear).unwrap();
        t.append_message(&ChatMessage::user_text("after"), &[])
            .unwrap();
        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.messages, vec![ChatMessage::user_text("after")]);
        assert!(loaded.mail_ids.contains("m1"));
        assert_eq!(loaded.corrupt_lines, 0);
        let raw = std::fs::read_to_string(&path).unwrap();
        assert!(raw.contains(r#""type":"boundary","kind":"clear""#), "{raw}");
    }

    #[test]
    fn loading_after_a_compaction_restores_the_compacted_view_and_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        for i in 0..5 {
            t.append_message(&ChatMessage::user_text(format!("old {i}")), &[])
                .unwrap();
        }
        let mark = CompactMark {
            reason: "threshold".into(),
            tokens_before: 900,
            tokens_after: 100,
            todos: vec![crate::todo::TodoItem {
                content: "test".into(),
                status: crate::todo::TodoStatus::Pending,
                active_form: "testing".into(),
            }],
        };
        let view = vec![
            ChatMessage::user_text("summary"),
            ChatMessage::assistant_text("recent"),
        ];
        t.append_compaction(mark.clone(), &view).unwrap();
        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.messages, view);
        assert_eq!(loaded.compacted, Some(mark));
        let raw = std::fs::read_to_string(&path).unwrap();
        assert!(raw.contains("old 0"), "the file keeps everything");
        assert!(raw.contains(r#""kind":"compact""#), "{raw}");
        // A later /clear forgets the compaction record too.
        t.append_boundary(Boundary::Clear).unwrap();
        assert_eq!(Transcript::load(&path).unwrap().compacted, None);
    }

    #[test]
    fn a_last_line_torn_inside_a_character_is_skipped_and_the_next_line_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.append_message(&ChatMessage::user_text("café"), &[])
            .unwrap();
        drop(t);
        // A full disk kept only the first byte of `é` (0xC3 0xA9) of the next line.
        let mut raw = std::fs::read(&path).unwrap();
        let torn_at = raw.len();
        raw.extend_from_slice(
            b"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"caf\xc3",
        );
        std::fs::write(&path, &raw).unwrap();

        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.messages, vec![ChatMessage::user_text("café")]);
        assert_eq!(loaded.corrupt_lines, 1);

        let mut t = Transcript::open(&path).unwrap();
        t.append_message(&ChatMessage::user_text("again"), &[])
            .unwrap();
        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(
            loaded.messages,
            vec![
                ChatMessage::user_text("café"),
                ChatMessage::user_text("again")
            ]
        );
        assert_eq!(loaded.corrupt_lines, 1);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[torn_at..].iter().filter(|b| **b == b'\n').count(), 2);
    }

    #[test]
    fn a_started_sync_counts_once_finished_and_a_sync_meanwhile_covers_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::open(&path).unwrap();
        t.append_message(&ChatMessage::user_text("round 1"), &[])
            .unwrap();
        let started = t.start_sync().unwrap().expect("a line to sync");
        assert_eq!((t.synced, t.written), (0, 1), "not durable until finished");
        t.append_message(&ChatMessage::user_text("round 2"), &[])
            .unwrap();
        t.finish_sync(started.wait()).unwrap();
        assert_eq!(
            (t.synced, t.written),
            (1, 2),
            "the started sync covered round 1 only"
        );
        assert!(
            t.start_sync().unwrap().is_some(),
            "round 2 is still to sync"
        );
        // Dropped without a wait: the next sync covers everything.
        t.sync().unwrap();
        assert_eq!((t.synced, t.written), (2, 2));
        assert!(
            t.start_sync().unwrap().is_none(),
            "nothing written, nothing to sync"
        );
        assert_eq!(Transcript::load(&path).unwrap().messages.len(), 2);
    }
}
