//! Append-only JSON-lines files: locked whole-line appends, reads of complete lines, and the
//! one line parser every JSON-lines reader in troupe uses.
//!
//! Lines are read as bytes, never as text: a line torn in the middle of a multi-byte character
//! (a full disk, a killed writer) is one bad line like any other — skipped and reported — and
//! never makes the whole log unreadable.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::lock::LockGuard;
use crate::DurableError;
use crate::{CorruptLine, Durability};

/// Longest excerpt of a corrupt line kept in reports.
const EXCERPT_CHARS: usize = 200;

/// Appends `bytes` (one or more complete lines) under an exclusive lock with a single
/// `write_all`, then syncs. If a crashed writer left a partial last line, a newline is written
/// first so that the fragment becomes its own (corrupt) line instead of swallowing ours.
pub fn append_lines(path: &Path, bytes: &[u8], durability: Durability) -> Result<(), DurableError> {
    let file = write_lines(path, bytes)?;
    if durability == Durability::Fsync {
        file.sync_data().map_err(DurableError::io("fsync", path))?;
    }
    Ok(())
}

/// [`append_lines`] without the sync: the lines are written (and visible) when it returns and
/// the lock is released; the caller syncs the returned handle (through a group commit) before
/// it reports them written.
pub fn write_lines(path: &Path, bytes: &[u8]) -> Result<File, DurableError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(DurableError::io("open for append", path))?;
    {
        let _guard = LockGuard::exclusive(&file, path)?;
        let torn = ends_unterminated(&file, path)?;
        let mut writer = &file;
        if torn {
            tracing::warn!(path = %path.display(), "partial last line found; isolating it");
            let mut fixed = Vec::with_capacity(bytes.len() + 1);
            fixed.push(b'\n');
            fixed.extend_from_slice(bytes);
            writer
                .write_all(&fixed)
                .map_err(DurableError::io("append to", path))?;
        } else {
            writer
                .write_all(bytes)
                .map_err(DurableError::io("append to", path))?;
        }
    }
    Ok(file)
}

/// True when the file's last byte is not a newline: a writer died in the middle of a line.
fn ends_unterminated(file: &File, path: &Path) -> Result<bool, DurableError> {
    let len = file
        .metadata()
        .map_err(DurableError::io("stat", path))?
        .len();
    let mut last = [0u8; 1];
    Ok(len > 0
        && file
            .read_at(&mut last, len - 1)
            .map_err(DurableError::io("read", path))?
            == 1
        && last[0] != b'\n')
}

/// For a log with a single writer that keeps its own handle open for appending (an agent's
/// transcript): ends a torn last line with a newline, so that the writer's next line starts
/// on a line of its own instead of being glued to the fragment. Returns whether it did.
pub fn seal_torn_tail(file: &File, path: &Path) -> Result<bool, DurableError> {
    let torn = ends_unterminated(file, path)?;
    if torn {
        tracing::warn!(path = %path.display(), "partial last line found; isolating it");
        let mut writer = file;
        writer
            .write_all(b"\n")
            .map_err(DurableError::io("append to", path))?;
        file.sync_data().map_err(DurableError::io("fsync", path))?;
    }
    Ok(torn)
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
pub fn read_from(path: &Path, from: u64) -> Result<Chunk, DurableError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Ok(Chunk {
                start: from,
                ..Chunk::default()
            })
        }
        Err(e) => return Err(DurableError::io("open", path)(e)),
    };
    // Writers hold the exclusive lock for the whole line, so under the shared lock no line is
    // half-written (except one abandoned by a crash, which has no newline and is left out).
    let _guard = LockGuard::shared(&file, path)?;
    let file_len = file
        .metadata()
        .map_err(DurableError::io("stat", path))?
        .len();
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
        .map_err(DurableError::io("seek", path))?;
    let mut bytes = Vec::with_capacity(usize::try_from(file_len - from).unwrap_or(0));
    reader
        .take(file_len - from)
        .read_to_end(&mut bytes)
        .map_err(DurableError::io("read", path))?;
    let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(keep);
    Ok(Chunk {
        start: from,
        bytes,
        file_len,
    })
}

/// Reads the last `max_lines` complete lines (fewer when the log is shorter) under a shared
/// lock, reading backwards from the end in blocks so that a long log costs only its tail. A
/// missing file reads as empty.
pub fn read_tail(path: &Path, max_lines: usize) -> Result<Chunk, DurableError> {
    const BLOCK: u64 = 64 * 1024;
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Chunk::default()),
        Err(e) => return Err(DurableError::io("open", path)(e)),
    };
    let _guard = LockGuard::shared(&file, path)?;
    let file_len = file
        .metadata()
        .map_err(DurableError::io("stat", path))?
        .len();
    // `tail` holds the bytes from `pos` to the end of the file.
    let mut pos = file_len;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let newlines = tail.iter().filter(|b| **b == b'\n').count();
        // One newline more than lines wanted: the one that ends the line before the first.
        if pos == 0 || newlines > max_lines {
            break;
        }
        let start = pos.saturating_sub(BLOCK);
        let mut block = vec![0u8; usize::try_from(pos - start).unwrap_or(0)];
        file.read_exact_at(&mut block, start)
            .map_err(DurableError::io("read", path))?;
        block.extend_from_slice(&tail);
        tail = block;
        pos = start;
    }
    // A partial last line (a writer died mid-line) is left out, as in `read_from`.
    let keep = tail.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    tail.truncate(keep);
    let ends: Vec<usize> = tail
        .iter()
        .enumerate()
        .filter_map(|(i, b)| (*b == b'\n').then_some(i))
        .collect();
    let first = if ends.len() > max_lines {
        // Past the newline that ends the line before the ones kept (or before a fragment of
        // a line whose start was not read).
        ends[ends.len() - max_lines - 1] + 1
    } else if pos == 0 {
        0
    } else {
        // Fewer newlines than asked although not at the start: only when max_lines is 0.
        tail.len()
    };
    let bytes = tail.split_off(first);
    Ok(Chunk {
        start: pos + first as u64,
        bytes,
        file_len,
    })
}

/// Parses one line as `T`. Invalid UTF-8 (a line torn inside a multi-byte character) and
/// unparsable JSON alike come back as a [`CorruptLine`] naming what was wrong.
pub fn parse_line<T: DeserializeOwned>(offset: u64, line: &[u8]) -> Result<T, CorruptLine> {
    let corrupt = |error: String| CorruptLine {
        offset,
        text: excerpt(line),
        error,
    };
    if let Err(e) = std::str::from_utf8(line) {
        return Err(corrupt(format!(
            "not valid UTF-8 at byte {} of the line (torn in the middle of a character?)",
            e.valid_up_to()
        )));
    }
    serde_json::from_slice(line).map_err(|e| corrupt(e.to_string()))
}

/// Parses every line of a chunk: the values in order, and the lines that did not parse.
pub fn parse_chunk<T: DeserializeOwned>(chunk: &Chunk) -> (Vec<T>, Vec<CorruptLine>) {
    let mut values = Vec::new();
    let mut corrupt = Vec::new();
    for (offset, line) in chunk.lines() {
        match parse_line(offset, line) {
            Ok(v) => values.push(v),
            Err(bad) => corrupt.push(bad),
        }
    }
    (values, corrupt)
}

/// A whole JSON-lines log read back, for logs read once at start (transcripts).
#[derive(Debug)]
pub struct Log<T> {
    /// Every line that parsed, in order.
    pub entries: Vec<T>,
    /// Lines that were skipped, in order: torn or unparsable ones.
    pub corrupt: Vec<CorruptLine>,
    /// The file did not end with a newline: its last line was torn (it is in `entries` when
    /// it still parsed, in `corrupt` otherwise). A writer must start its next line on a new
    /// line ([`seal_torn_tail`]).
    pub unterminated: bool,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log {
            entries: Vec::new(),
            corrupt: Vec::new(),
            unterminated: false,
        }
    }
}

/// Reads a whole log, the unterminated last line included, skipping lines that do not parse.
/// Each skipped line is logged as a warning naming `what` and the file. A missing file reads
/// as empty.
pub fn read_log<T: DeserializeOwned>(path: &Path, what: &str) -> Result<Log<T>, DurableError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Log::default()),
        Err(e) => return Err(DurableError::io("open", path)(e)),
    };
    let _guard = LockGuard::shared(&file, path)?;
    let mut bytes = Vec::new();
    (&file)
        .read_to_end(&mut bytes)
        .map_err(DurableError::io("read", path))?;
    Ok(parse_log(bytes, what, &path.display().to_string()))
}

/// Parses a whole log held in memory as [`read_log`] parses a file: the unterminated last line
/// included, lines that do not parse skipped, each logged as a warning naming `what` and
/// `source` (where the bytes came from).
pub fn parse_log<T: DeserializeOwned>(mut bytes: Vec<u8>, what: &str, source: &str) -> Log<T> {
    let unterminated = bytes.last().is_some_and(|b| *b != b'\n');
    if unterminated {
        // The torn tail is parsed like any line: a writer killed right before its newline
        // leaves a whole record behind.
        bytes.push(b'\n');
    }
    let chunk = Chunk {
        start: 0,
        file_len: bytes.len() as u64,
        bytes,
    };
    let (entries, corrupt) = parse_chunk(&chunk);
    for bad in &corrupt {
        tracing::warn!(source, offset = bad.offset, error = %bad.error, "skipping corrupt {what} line");
    }
    Log {
        entries,
        corrupt,
        unterminated,
    }
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
    fn tail_reads_the_last_lines_across_blocks_and_leaves_a_partial_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("log.jsonl");
        assert_eq!(read_tail(&path, 3).map(|c| c.end()).ok(), Some(0));
        // Lines long enough that the tail spans several 64 KiB blocks.
        let mut all = Vec::new();
        for i in 0..400 {
            all.extend_from_slice(
                format!("{{\"i\":{i},\"pad\":\"{}\"}}\n", "x".repeat(500)).as_bytes(),
            );
        }
        append_lines(&path, &all, Durability::OsBuffered).unwrap_or_else(|e| panic!("{e}"));
        let mut f = OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        f.write_all(b"{\"torn\":").unwrap_or_else(|e| panic!("{e}"));
        let whole = read_from(&path, 0).unwrap_or_else(|e| panic!("{e}"));
        for want in [0usize, 1, 150, 399, 400, 1000] {
            let chunk = read_tail(&path, want).unwrap_or_else(|e| panic!("{e}"));
            let got: Vec<_> = chunk.lines().map(|(o, l)| (o, l.to_vec())).collect();
            let expected: Vec<_> = whole.lines().map(|(o, l)| (o, l.to_vec())).collect();
            let expected = expected[expected.len().saturating_sub(want)..].to_vec();
            assert_eq!(got, expected, "last {want} lines");
            assert_eq!(
                chunk.end(),
                whole.end(),
                "the cursor follows the last whole line"
            );
        }
    }

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

    /// A log whose last line was torn inside `é` (0xC3 0xA9): only 0xC3 made it to disk.
    fn torn_inside_a_character(path: &Path) {
        std::fs::write(path, b"{\"a\":\"caf\xc3\xa9\"}\n{\"a\":\"caf\xc3")
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_line_torn_inside_a_character_is_skipped_and_reported() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("t.jsonl");
        torn_inside_a_character(&path);
        let log: Log<serde_json::Value> = read_log(&path, "test").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.entries, vec![serde_json::json!({"a": "café"})]);
        assert!(log.unterminated);
        assert_eq!(log.corrupt.len(), 1);
        assert_eq!(log.corrupt[0].offset, 14);
        assert!(log.corrupt[0].error.contains("UTF-8"), "{:?}", log.corrupt);
    }

    #[test]
    fn invalid_utf8_inside_the_log_is_one_bad_line_among_good_ones() {
        let chunk = Chunk {
            start: 0,
            bytes: b"{\"n\":1}\n{\"n\":\"\xff\xfe\"}\nnot json\n{\"n\":4}\n".to_vec(),
            file_len: 0,
        };
        let (values, corrupt) = parse_chunk::<serde_json::Value>(&chunk);
        assert_eq!(
            values,
            vec![serde_json::json!({"n": 1}), serde_json::json!({"n": 4})]
        );
        let offsets: Vec<u64> = corrupt.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, vec![8, 19]);
        assert!(corrupt[0].error.contains("UTF-8"));
        assert!(!corrupt[1].error.contains("UTF-8"));
    }

    #[test]
    fn a_torn_tail_that_still_parses_is_kept_and_sealed_before_the_next_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"{\"n\":1}\n{\"n\":2}").unwrap_or_else(|e| panic!("{e}"));
        let log: Log<serde_json::Value> = read_log(&path, "test").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.entries.len(), 2);
        assert!(log.unterminated && log.corrupt.is_empty());
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(seal_torn_tail(&file, &path).unwrap_or_else(|e| panic!("{e}")));
        assert!(!seal_torn_tail(&file, &path).unwrap_or_else(|e| panic!("{e}")));
        (&file)
            .write_all(b"{\"n\":3}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let log: Log<serde_json::Value> = read_log(&path, "test").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.entries.len(), 3);
        assert!(!log.unterminated);
    }

    #[test]
    fn missing_file_and_past_end_read_empty() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("none.jsonl");
        let chunk = read_from(&path, 5).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((chunk.start, chunk.end(), chunk.file_len), (5, 5, 0));
    }
}
