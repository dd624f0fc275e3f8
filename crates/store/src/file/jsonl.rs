//! Append-only JSON-lines files: locked whole-line appends and reads of complete lines only.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::StoreError;
use crate::file::lock::LockGuard;
use crate::Durability;

/// Longest excerpt of a corrupt line kept in reports.
const EXCERPT_CHARS: usize = 200;

/// Appends `bytes` (one or more complete lines) under an exclusive lock with a single
/// `write_all`, then syncs. If a crashed writer left a partial last line, a newline is written
/// first so that the fragment becomes its own (corrupt) line instead of swallowing ours.
pub fn append_lines(path: &Path, bytes: &[u8], durability: Durability) -> Result<(), StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(StoreError::io("open for append", path))?;
    let _guard = LockGuard::exclusive(&file, path)?;
    let len = file.metadata().map_err(StoreError::io("stat", path))?.len();
    let mut last = [0u8; 1];
    let torn = len > 0
        && file
            .read_at(&mut last, len - 1)
            .map_err(StoreError::io("read", path))?
            == 1
        && last[0] != b'\n';
    let mut writer = &file;
    if torn {
        tracing::warn!(path = %path.display(), "partial last line found; isolating it");
        let mut fixed = Vec::with_capacity(bytes.len() + 1);
        fixed.push(b'\n');
        fixed.extend_from_slice(bytes);
        writer
            .write_all(&fixed)
            .map_err(StoreError::io("append to", path))?;
    } else {
        writer
            .write_all(bytes)
            .map_err(StoreError::io("append to", path))?;
    }
    if durability == Durability::Fsync {
        file.sync_data().map_err(StoreError::io("fsync", path))?;
    }
    Ok(())
}

/// Complete lines read from a log, starting at byte `start`.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Offset of the first byte.
    pub start: u64,
    /// The bytes, ending with a newline (a partial trailing line is left out).
    pub bytes: Vec<u8>,
    /// The file's length when read.
    pub file_len: u64,
}

impl Chunk {
    /// Offset just past the last complete line.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Each non-blank line with its offset, newline stripped.
    pub fn lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let mut offset = self.start;
        self.bytes
            .split_inclusive(|b| *b == b'\n')
            .filter_map(move |raw| {
                let at = offset;
                offset += raw.len() as u64;
                let line = raw.strip_suffix(b"\n").unwrap_or(raw);
                (!line.iter().all(u8::is_ascii_whitespace)).then_some((at, line))
            })
    }
}

/// Reads complete lines from `from` to the end under a shared lock. A missing file reads as
/// empty. When `from` is past the end the chunk is empty and starts at `from`; callers decide
/// what that means.
pub fn read_from(path: &Path, from: u64) -> Result<Chunk, StoreError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Ok(Chunk {
                start: from,
                ..Chunk::default()
            })
        }
        Err(e) => return Err(StoreError::io("open", path)(e)),
    };
    // Writers hold the exclusive lock for the whole line, so under the shared lock no line is
    // half-written (except one abandoned by a crash, which has no newline and is left out).
    let _guard = LockGuard::shared(&file, path)?;
    let file_len = file.metadata().map_err(StoreError::io("stat", path))?.len();
    if from >= file_len {
        return Ok(Chunk {
            start: from,
            bytes: Vec::new(),
            file_len,
        });
    }
    // `&File` reads and seeks, so the borrow held by the lock guard is no obstacle.
    let mut reader = &file;
    reader
        .seek(SeekFrom::Start(from))
        .map_err(StoreError::io("seek", path))?;
    let mut bytes = Vec::with_capacity(usize::try_from(file_len - from).unwrap_or(0));
    reader
        .take(file_len - from)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io("read", path))?;
    let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(keep);
    Ok(Chunk {
        start: from,
        bytes,
        file_len,
    })
}

/// A short, printable excerpt of a bad line.
pub fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_tail_is_left_and_torn_line_isolated() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.jsonl");
        append_lines(&path, b"{\"a\":1}\n", Durability::OsBuffered)
            .unwrap_or_else(|e| panic!("{e}"));
        // Simulate a writer that crashed mid-line.
        let mut f = OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        f.write_all(b"{\"b\":").unwrap_or_else(|e| panic!("{e}"));
        let chunk = read_from(&path, 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(chunk.end(), 8);
        assert_eq!(chunk.lines().count(), 1);
        append_lines(&path, b"{\"c\":3}\n", Durability::OsBuffered)
            .unwrap_or_else(|e| panic!("{e}"));
        let chunk = read_from(&path, 0).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<_> = chunk.lines().map(|(o, l)| (o, l.to_vec())).collect();
        assert_eq!(
            lines,
            vec![
                (0, b"{\"a\":1}".to_vec()),
                (8, b"{\"b\":".to_vec()),
                (14, b"{\"c\":3}".to_vec())
            ]
        );
    }

    #[test]
    fn missing_file_and_past_end_read_empty() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("none.jsonl");
        let chunk = read_from(&path, 5).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((chunk.start, chunk.end(), chunk.file_len), (5, 5, 0));
    }
}
