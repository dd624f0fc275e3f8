//! Presence `presence/<agent>.doing`: what each member is doing right now, and
//! `presence/<agent>.usage`: its running token total — one small file per member and kind,
//! rewritten in place, never synced and never locked, so a tool call or a model reply costs one
//! page-cache write instead of a locked, fsync'd rewrite of the roster (and no new inode per
//! write, which a temp file and a rename would cost: at a thousand members the file system's
//! inode allocation showed up in profiles).
//!
//! A file holds one record: a header line `troupe-presence <len> <fnv1a-64 hex>` and the value's
//! `len` bytes. A writer writes the record at offset 0 and then cuts the file to its length, so a
//! reader racing it may see a mix of the old and the new record; the length and checksum tell,
//! and the reader reads again (a few times, then treats the member as having no presence — it is
//! only a hint for the dashboard). "Doing nothing" is an empty value, so a member's file is made
//! once and then only rewritten.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::sync::SyncPresence;
use super::{check_agent, FileStore};
use crate::error::StoreError;
use troupe_protocol::AgentUsage;

const SUFFIX: &str = ".doing";
const USAGE_SUFFIX: &str = ".usage";
/// First word of a record's header line.
const MAGIC: &str = "troupe-presence";
/// Reads of a record that keep finding a write in progress before it is skipped.
const READ_TRIES: usize = 3;

impl FileStore {
    fn presence_dir(&self) -> PathBuf {
        self.inner.dir.join("presence")
    }
}

/// FNV-1a, 64 bits: enough to tell a torn record from a whole one.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The record holding `value`.
fn encode(value: &[u8]) -> Vec<u8> {
    let header = format!("{MAGIC} {} {:016x}\n", value.len(), checksum(value));
    let mut record = Vec::with_capacity(header.len() + value.len());
    record.extend_from_slice(header.as_bytes());
    record.extend_from_slice(value);
    record
}

/// The value of a whole record; `None` for a torn or foreign one.
fn decode(bytes: &[u8]) -> Option<&[u8]> {
    let end = bytes.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut words = header.split(' ');
    if words.next()? != MAGIC {
        return None;
    }
    let len: usize = words.next()?.parse().ok()?;
    let sum = u64::from_str_radix(words.next()?, 16).ok()?;
    let value = bytes.get(end + 1..end + 1 + len)?;
    (words.next().is_none() && checksum(value) == sum).then_some(value)
}

/// Rewrites `path` in place with the record of `value` (creating it, and its directory, the
/// first time).
fn write_record(path: &Path, value: &[u8]) -> Result<(), StoreError> {
    // Not truncated on open: a reader must never find the file empty mid-write.
    let open = || {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    };
    let file = match open() {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(StoreError::io("create directory", dir))?;
            }
            open()
        }
        other => other,
    }
    .map_err(StoreError::io("open", path))?;
    let record = encode(value);
    file.write_all_at(&record, 0)
        .map_err(StoreError::io("write", path))?;
    file.set_len(record.len() as u64)
        .map_err(StoreError::io("truncate", path))
}

/// The value in `path`; `None` when it is missing, or still torn after a few reads, or foreign.
fn read_record(path: &Path) -> Option<Vec<u8>> {
    for _ in 0..READ_TRIES {
        let bytes = fs::read(path).ok()?;
        if let Some(value) = decode(&bytes) {
            return Some(value.to_vec());
        }
        std::thread::yield_now();
    }
    None
}

/// Every member's value of one kind (`suffix`), by name.
fn read_all(dir: &Path, suffix: &str) -> Result<BTreeMap<String, Vec<u8>>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(StoreError::io("list", dir)(e)),
    };
    let mut values = BTreeMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(agent) = name.strip_suffix(suffix) else {
            continue;
        };
        if let Some(value) = read_record(&entry.path()) {
            values.insert(agent.to_string(), value);
        }
    }
    Ok(values)
}

impl SyncPresence for FileStore {
    fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        check_agent(agent)?;
        let path = self.presence_dir().join(format!("{agent}{SUFFIX}"));
        match doing {
            Some(text) => write_record(&path, text.as_bytes()),
            // Nothing to clear when there never was a file.
            None if !path.exists() => Ok(()),
            None => write_record(&path, b""),
        }
    }

    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        Ok(read_all(&self.presence_dir(), SUFFIX)?
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(agent, value)| (agent, String::from_utf8_lossy(&value).into_owned()))
            .collect())
    }

    fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        check_agent(agent)?;
        let path = self.presence_dir().join(format!("{agent}{USAGE_SUFFIX}"));
        let text = serde_json::to_vec(usage).map_err(|e| {
            StoreError::io("encode", &path)(std::io::Error::new(ErrorKind::InvalidData, e))
        })?;
        write_record(&path, &text)
    }

    fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        // A value that does not parse (a foreign file) is skipped.
        Ok(read_all(&self.presence_dir(), USAGE_SUFFIX)?
            .into_iter()
            .filter_map(|(agent, value)| Some((agent, serde_json::from_slice(&value).ok()?)))
            .collect())
    }
}

#[cfg(test)]
#[path = "presence_tests.rs"]
mod tests;
