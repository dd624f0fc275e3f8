//! Reading background commands' logs: new output for `bash_output`, the tail for a
//! notification, and the numbering already used in a log folder.

use super::JobError;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Lines of output a notification quotes.
const NOTIFY_LINES: usize = 20;
/// Bytes from the end of the log a notification looks at.
const NOTIFY_BYTES: u64 = 4096;

/// The output of `log` from byte `from` on, under the output budget, and how many bytes that was.
pub(super) fn read_from(log: &Path, from: u64) -> Result<(String, u64), JobError> {
    let mut file =
        std::fs::File::open(log).map_err(JobError::io(format!("opening {}", log.display())))?;
    file.seek(SeekFrom::Start(from))
        .map_err(JobError::io(format!("reading {}", log.display())))?;
    let mut collected = crate::output::HeadTail::new(crate::DEFAULT_OUTPUT_BUDGET);
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(JobError::io(format!("reading {}", log.display())))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        collected.push(&buf[..n]);
    }
    Ok((collected.into_text(), bytes))
}

/// The last lines of `log` (from byte `from` on at most), for a notification.
pub(super) fn tail_of(log: &Path, from: u64) -> String {
    let Ok(mut file) = std::fs::File::open(log) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = from.max(len.saturating_sub(NOTIFY_BYTES)).min(len);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > from && !lines.is_empty() {
        lines.remove(0); // cut mid-line
    }
    let keep = lines.len().saturating_sub(NOTIFY_LINES);
    lines[keep..].join("\n")
}

/// The highest `bg-<n>.log` number in `dir` (0 when none).
pub(super) fn highest_log_number(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            name.strip_prefix("bg-")?.strip_suffix(".log")?.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

pub(crate) use troupe_protocol::now_ms;
