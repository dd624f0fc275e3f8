//! Volatile records at fixed places of a file: a member's slot in the team's member table
//! (`slots`, `members`), and the roster log's index in `roster.lock` (`roster_index`).
//! Each is written in place by its own writer and never synced (they matter only while the
//! member lives, or only for this boot, and readers share the page cache). A member's slot:
//!
//! ```text
//! 0      its name, written once when the slot is claimed
//! 256    the lease's holder (pid, start, host), written when the lease is taken or handed on
//! 512    where its newest roster record is (`roster_index`), with every roster update of it
//! 1024   its token usage (presence), after each model reply
//! 4096   what it is doing (presence), per tool call, cut to fit
//! ```
//!
//! A record is a header line `troupe-presence <len> <fnv1a-64 hex>` and the value's `len` bytes.
//! A writer writes its record in its region without clearing it first, so a reader racing it
//! may see a mix of the old and the new record; the length and checksum tell, and the reader
//! reads again (a few times, then treats the record as missing: presence is only a hint for
//! the dashboard, and a holder still being written reads as unknown). A region never written (a
//! hole, or past the end) reads as missing. "Doing nothing" is an empty value.
//!
//! An older troupe kept each member's records in a file of its own, `live/<agent>.lock`, with
//! the holder at 0 and what it was doing from 4096 to the file's end; its presence is still
//! read (`presence`).

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::StoreError;

/// Where a record lives: from `start` (its header) to `end` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    pub start: u64,
    pub end: u64,
}

/// A slot's size: the regions below, one after the other.
pub(crate) const SLOT: u64 = 8192;
/// The member's name.
pub(crate) const NAME: Region = Region { start: 0, end: 256 };
/// The lease's holder.
pub(crate) const HOLDER: Region = Region {
    start: 256,
    end: 512,
};
/// The place of the member's newest roster record.
pub(crate) const ROSTER: Region = Region {
    start: 512,
    end: 1024,
};
/// The member's token usage.
pub(crate) const USAGE: Region = Region {
    start: 1024,
    end: 4096,
};
/// What the member is doing.
pub(crate) const DOING: Region = Region {
    start: 4096,
    end: SLOT,
};
/// The roster log's index in `roster.lock`.
pub(crate) const LOG_INFO: Region = Region { start: 0, end: 512 };
/// An older troupe's member file: its lease's holder, its usage, and what it was doing (to the
/// file's end).
pub(crate) const LEGACY_HOLDER: Region = Region { start: 0, end: 512 };
pub(crate) const LEGACY_USAGE: Region = USAGE;
pub(crate) const LEGACY_DOING: Region = Region {
    start: 4096,
    end: 4096 + SLOT,
};

/// First word of a record's header line.
const MAGIC: &str = "troupe-presence";
/// The longest header: the magic word, a length and a checksum.
pub(crate) const HEADER_MAX: u64 = (MAGIC.len() + 1 + 20 + 1 + 16 + 1) as u64;
/// Reads of a record that keep finding a write in progress before it is taken as missing.
const READ_TRIES: usize = 3;
/// Bytes read at first: a header and a short value.
const FIRST_READ: u64 = 512;

/// FNV-1a, 64 bits: enough to tell a torn record from a whole one.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The record holding `value`.
pub(crate) fn encode(value: &[u8]) -> Vec<u8> {
    let header = format!("{MAGIC} {} {:016x}\n", value.len(), checksum(value));
    let mut record = Vec::with_capacity(header.len() + value.len());
    record.extend_from_slice(header.as_bytes());
    record.extend_from_slice(value);
    record
}

/// The header's end (just past its newline) and the value's length; `None` when `bytes` does
/// not start with a header.
fn header(bytes: &[u8]) -> Option<(usize, usize)> {
    let end = bytes.iter().take(64).position(|b| *b == b'\n')?;
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut words = text.split(' ');
    if words.next()? != MAGIC {
        return None;
    }
    let len = words.next()?.parse().ok()?;
    Some((end + 1, len))
}

/// The value of a whole record at the start of `bytes`; `None` for a torn or foreign one.
pub(crate) fn decode(bytes: &[u8]) -> Option<&[u8]> {
    let (start, len) = header(bytes)?;
    let text = std::str::from_utf8(&bytes[..start - 1]).ok()?;
    let mut words = text.split(' ').skip(2);
    let sum = u64::from_str_radix(words.next()?, 16).ok()?;
    let value = bytes.get(start..start + len)?;
    (words.next().is_none() && checksum(value) == sum).then_some(value)
}

/// Writes the record of `value` in `region` of the slot at `base` of `file` (at `path`, for
/// errors); a record too long for its region is refused and the one there stays.
pub(crate) fn write(
    file: &File,
    path: &Path,
    base: u64,
    region: Region,
    value: &[u8],
) -> Result<(), StoreError> {
    let record = encode(value);
    if record.len() as u64 > region.end - region.start {
        return Err(StoreError::io("write", path)(std::io::Error::new(
            ErrorKind::InvalidInput,
            format!("a record of {} bytes does not fit its place", record.len()),
        )));
    }
    file.write_all_at(&record, base + region.start)
        .map_err(StoreError::io("write", path))
}

/// What the record in `region` of the slot at `base` says: `Empty` when it was never written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Value(Vec<u8>),
    Empty,
    /// Still torn (or foreign) after a few reads.
    Torn,
}

/// The value of the record in `region` of the slot at `base`; `None` when it is missing,
/// foreign, or still torn after a few reads.
pub(crate) fn read(file: &File, base: u64, region: Region) -> Option<Vec<u8>> {
    match look(file, base, region) {
        Found::Value(value) => Some(value),
        Found::Empty | Found::Torn => None,
    }
}

/// The record in `region` of the slot at `base`, telling a region never written from a torn one.
pub(crate) fn look(file: &File, base: u64, region: Region) -> Found {
    let at = base + region.start;
    let first = FIRST_READ.min(region.end - region.start) as usize;
    let whole = (region.end - region.start) as usize;
    for _ in 0..READ_TRIES {
        let mut bytes = vec![0u8; first];
        let Some(n) = read_at(file, &mut bytes, at) else {
            return Found::Torn;
        };
        bytes.truncate(n);
        let Some((start, len)) = header(&bytes) else {
            if bytes.first().is_none_or(|b| *b == 0) {
                return Found::Empty;
            }
            std::thread::yield_now();
            continue;
        };
        if start + len > bytes.len() && n == first && start + len <= whole {
            bytes.resize(start + len, 0);
            let Some(more) = read_at(file, &mut bytes[first..], at + first as u64) else {
                return Found::Torn;
            };
            bytes.truncate(first + more);
        }
        if let Some(value) = decode(&bytes) {
            return Found::Value(value.to_vec());
        }
        std::thread::yield_now();
    }
    Found::Torn
}

/// Reads what there is at `at` into `buf` (less at the end of the file).
fn read_at(file: &File, buf: &mut [u8], at: u64) -> Option<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_torn_or_foreign_one_does_not() {
        let record = encode(b"running cargo test");
        assert_eq!(decode(&record), Some(&b"running cargo test"[..]));
        assert_eq!(decode(&encode(b"")), Some(&b""[..]));
        // A longer old record's tail left behind by a shorter one written over it.
        let mut with_tail = encode(b"short");
        with_tail.extend_from_slice(b"left over from before");
        assert_eq!(decode(&with_tail), Some(&b"short"[..]));
        // Half new, half old: the checksum tells.
        let old = encode(b"reading src/main.rs");
        let new = encode(b"editing src/lib.rs!");
        let mut torn = new[..new.len() - 6].to_vec();
        torn.extend_from_slice(&old[old.len() - 6..]);
        assert_eq!(decode(&torn), None);
        // Cut short, written by something else, or never written (a hole reads as zeros).
        assert_eq!(decode(&record[..record.len() - 1]), None);
        assert_eq!(decode(b"running cargo test"), None);
        assert_eq!(decode(b""), None);
        assert_eq!(decode(&[0u8; 64]), None);
    }

    #[test]
    fn the_records_of_two_slots_share_one_file_without_disturbing_each_other() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("members");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(look(&file, 0, USAGE), Found::Empty, "past the end");
        ok(write(&file, &path, SLOT, DOING, &[b'x'; 3000]));
        assert_eq!(look(&file, 0, USAGE), Found::Empty, "a hole");
        ok(write(&file, &path, 0, HOLDER, b"{\"pid\":1}"));
        ok(write(&file, &path, 0, USAGE, b"{\"usage\":{}}"));
        ok(write(&file, &path, 0, DOING, b"short"));
        ok(write(&file, &path, SLOT, DOING, b"other"));
        assert_eq!(read(&file, 0, HOLDER).as_deref(), Some(&b"{\"pid\":1}"[..]));
        assert_eq!(
            read(&file, 0, USAGE).as_deref(),
            Some(&b"{\"usage\":{}}"[..])
        );
        assert_eq!(read(&file, 0, DOING).as_deref(), Some(&b"short"[..]));
        assert_eq!(read(&file, SLOT, DOING).as_deref(), Some(&b"other"[..]));
        assert_eq!(read(&file, SLOT, HOLDER), None);
        // A long record reads back whole.
        ok(write(&file, &path, 0, DOING, &[b'y'; 3000]));
        assert_eq!(read(&file, 0, DOING).map(|v| v.len()), Some(3000));
        // A record too long for its place is refused, and the one there stays.
        assert!(write(&file, &path, 0, USAGE, &[b'u'; 3100]).is_err());
        assert!(write(&file, &path, 0, DOING, &[b'u'; 4096]).is_err());
        assert_eq!(
            read(&file, 0, USAGE).as_deref(),
            Some(&b"{\"usage\":{}}"[..])
        );
        // Something that is not a record is torn, not empty.
        file.write_all_at(b"garbage", 2 * SLOT)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(look(&file, 2 * SLOT, NAME), Found::Torn);
    }
}
