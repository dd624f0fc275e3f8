//! Teammate transcripts `transcripts/<agent>.jsonl`: one conversation entry per line. The file
//! the agent writes is the transcript itself, so there is nothing to mirror.

use std::path::PathBuf;

use super::sync::SyncTranscripts;
use super::{check_agent, jsonl, FileStore, Folder};
use crate::error::StoreError;
use crate::{TranscriptBytes, TranscriptRead};

impl SyncTranscripts for FileStore {
    fn transcript_file(&self, agent: &str) -> Result<PathBuf, StoreError> {
        check_agent(agent)?;
        Ok(self
            .inner
            .dir
            .join("transcripts")
            .join(format!("{agent}.jsonl")))
    }

    fn transcript_len(&self, agent: &str) -> Result<u64, StoreError> {
        let path = self.transcript_file(agent)?;
        match std::fs::metadata(&path) {
            Ok(meta) => Ok(meta.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(StoreError::io("stat", path)(e)),
        }
    }

    fn append_transcript_lines(&self, agent: &str, lines: &[u8]) -> Result<u64, StoreError> {
        let path = self.transcript_file(agent)?;
        self.folder(Folder::Transcripts)?;
        self.append_durably(&path, lines)?;
        self.transcript_len(agent)
    }

    fn read_transcript_from(&self, agent: &str, from: u64) -> Result<TranscriptBytes, StoreError> {
        let path = self.transcript_file(agent)?;
        let chunk = jsonl::read_from(&path, from)?;
        Ok(TranscriptBytes {
            start: chunk.start,
            bytes: chunk.bytes,
            len: chunk.file_len,
        })
    }

    fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError> {
        let path = self.transcript_file(agent)?;
        let log = jsonl::read_log::<serde_json::Value>(&path, "transcript")?;
        Ok(TranscriptRead {
            entries: log.entries,
            corrupt: log.corrupt.len(),
        })
    }
}
