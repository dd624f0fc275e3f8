//! Transcripts stay on the machine that runs the agent: the local file store of its workspace
//! keeps them, exactly as with the file backend.

use std::path::PathBuf;

use serde_json::Value;
use troupe_store::{StoreError, TranscriptRead, TranscriptStore};

use crate::NatsStore;

impl TranscriptStore for NatsStore {
    fn transcript_file(&self, agent: &str) -> Result<PathBuf, StoreError> {
        self.inner.local.transcript_file(agent)
    }

    fn has_transcript(&self, agent: &str) -> Result<bool, StoreError> {
        self.inner.local.has_transcript(agent)
    }

    fn append_transcript(&self, agent: &str, entry: &Value) -> Result<(), StoreError> {
        self.inner.local.append_transcript(agent, entry)
    }

    fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError> {
        self.inner.local.read_transcript(agent)
    }
}
