//! A second home for a transcript's lines: what the agent wrote to its transcript file and
//! synced, handed on to whoever keeps the conversation beyond this machine (a team store on a
//! server). The agent knows only this trait; it neither knows nor cares where the lines go.
//!
//! Without a mirror (the headless `-p` path, the lead's sessions) nothing is buffered or
//! copied: the transcript file is the only copy.

/// Receives every line of a transcript once it is synced to the local file, in order.
#[async_trait::async_trait]
pub trait TranscriptMirror: Send + Sync {
    /// Makes `lines` durable beyond the local file: one or more whole JSON lines, each ending
    /// with a newline, exactly as they were written to the file. Awaited by the agent's loop
    /// after the file's sync (at the end of each model round, before a mailbox is acknowledged,
    /// at the end of a turn); lines synced outside the loop (a repair when a transcript is
    /// opened, a rewind, a compaction's) go with the next of those. On error the same lines,
    /// with any written later, are handed over again at the next one, so a failure loses
    /// nothing.
    async fn mirror(&self, lines: &[u8]) -> Result<(), MirrorError>;
}

/// A mirror that could not keep the lines: what it tried and why it failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MirrorError(pub String);

/// The lines written since the last sync, waiting for the mirror.
pub(crate) struct Pending {
    mirror: std::sync::Arc<dyn TranscriptMirror>,
    lines: Vec<u8>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("bytes", &self.lines.len())
            .finish()
    }
}

impl Pending {
    pub(crate) fn new(mirror: std::sync::Arc<dyn TranscriptMirror>) -> Pending {
        Pending {
            mirror,
            lines: Vec::new(),
        }
    }

    /// Keeps a line written to the file for the next hand-over.
    pub(crate) fn push(&mut self, line: &[u8]) {
        self.lines.extend_from_slice(line);
    }

    /// Hands what was kept to the mirror; kept for the next try when it fails.
    pub(crate) async fn flush(&mut self) -> Result<(), MirrorError> {
        if self.lines.is_empty() {
            return Ok(());
        }
        self.mirror.mirror(&self.lines).await?;
        self.lines.clear();
        Ok(())
    }
}
