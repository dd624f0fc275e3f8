//! The agent's session file: model replies recorded with their usage, and `/clear` as the
//! start of a new session (a new transcript, which the hooks then report).

use super::Agent;
use crate::lifecycle::SessionSource;
use crate::transcript::{now_ms, Boundary, Line, Transcript, TranscriptError};
use crate::ExtensionContext;
use std::path::Path;
use troupe_protocol::{ChatMessage, Usage};

impl Agent {
    /// Appends a model's reply, recording the tokens it used and the model in the transcript.
    pub(super) fn push_reply(
        &mut self,
        message: ChatMessage,
        usage: &Usage,
    ) -> Result<(), TranscriptError> {
        if let Some(t) = self.transcript.as_mut() {
            t.append_reply(&message, usage, &self.config.model)?;
        }
        self.messages.push(message);
        Ok(())
    }

    /// Forgets the conversation and goes on in a new session whose transcript is `path`
    /// (`/clear`): the old transcript is left as it was (resumable by its id), the new one
    /// starts with a line naming the session it was cleared from, and from now on the hooks
    /// see the new session's id and transcript. On error nothing changed.
    pub fn clear_into(&mut self, path: &Path) -> Result<(), TranscriptError> {
        let cleared_from = self
            .transcript
            .as_ref()
            .and_then(|t| t.path().file_stem())
            .map(|s| s.to_string_lossy().into_owned());
        let mut transcript = Transcript::open(path)?;
        transcript.append(&Line::Meta {
            id: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            agent: self.config.name.clone(),
            cwd: self.home.display().to_string(),
            ts: now_ms(),
            cleared_from,
        })?;
        self.messages.clear();
        self.compactor.replaced();
        self.compactor.spill =
            crate::compact::SpillDir::new(Some(path.with_extension("")), &self.home);
        self.session = Some(SessionSource::Clear);
        self.transcript = Some(transcript);
        self.rebind_lifecycle(path);
        Ok(())
    }

    /// Goes on with the conversation persisted in `path` (the REPL's `/resume`): its messages
    /// and todo list replace the current ones, and from now on the hooks see that session. On
    /// an error reading it nothing changed.
    pub fn resume_from(&mut self, path: &Path) -> Result<usize, TranscriptError> {
        // As `/clear`'s new session: a session transcript is mirrored nowhere.
        let restored = self.attach_transcript(path, None)?;
        self.session = Some(SessionSource::Resume);
        self.rebind_lifecycle(path);
        Ok(restored)
    }

    /// Goes back to the conversation's first `keep` messages (`/rewind`): the transcript
    /// gains a rewind boundary followed by those messages, so a later `--resume` finds the
    /// conversation as it is now. On error the conversation in memory is unchanged.
    pub fn rewind_to(&mut self, keep: usize) -> Result<(), TranscriptError> {
        if keep >= self.messages.len() {
            return Ok(());
        }
        if let Some(t) = self.transcript.as_mut() {
            t.append_boundary(Boundary::Rewind)?;
            for message in &self.messages[..keep] {
                t.append_message(message, &[])?;
            }
            t.sync()?;
        }
        self.messages.truncate(keep);
        self.compactor.replaced();
        Ok(())
    }

    /// Rebuilds the extensions' lifecycle hooks for the session whose transcript is `path`, so
    /// that from now on they see that session.
    fn rebind_lifecycle(&mut self, path: &Path) {
        let cx = ExtensionContext {
            agent: &self.config.name,
            workspace: &self.home,
            stop: &self.stop,
            mode: &self.live_mode,
            dirs: Some(&self.ctx.workspace),
            transcript: Some(path),
        };
        self.lifecycle = self
            .extensions
            .iter()
            .filter_map(|e| e.lifecycle(&cx))
            .collect();
    }

    /// The file the conversation is persisted in, if it is.
    pub fn transcript_path(&self) -> Option<&Path> {
        self.transcript.as_ref().map(Transcript::path)
    }
}
