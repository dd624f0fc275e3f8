//! Teammate transcripts `transcripts/<agent>.jsonl`: one conversation entry per line.

use std::path::PathBuf;

use serde_json::Value;

use super::{check_agent, jsonl, to_line, FileStore};
use crate::error::StoreError;
use crate::{TranscriptRead, TranscriptStore};

impl TranscriptStore for FileStore {
    fn transcript_file(&self, agent: &str) -> Result<PathBuf, StoreError> {
        check_agent(agent)?;
        Ok(self
            .inner
            .dir
            .join("transcripts")
            .join(format!("{agent}.jsonl")))
    }

    fn has_transcript(&self, agent: &str) -> Result<bool, StoreError> {
        let path = self.transcript_file(agent)?;
        match std::fs::metadata(&path) {
            Ok(meta) => Ok(meta.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("stat", path)(e)),
        }
    }

    fn append_transcript(&self, agent: &str, entry: &Value) -> Result<(), StoreError> {
        let path = self.transcript_file(agent)?;
        let line = to_line("transcript entry", entry)?;
        self.append_durably(&path, &line)
    }

    fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError> {
        let path = self.transcript_file(agent)?;
        let log = jsonl::read_log::<Value>(&path, "transcript")?;
        Ok(TranscriptRead {
            entries: log.entries,
            corrupt: log.corrupt.len(),
        })
    }
}
