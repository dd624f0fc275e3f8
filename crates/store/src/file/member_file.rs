//! A member's one file, `live/<agent>.lock`: the lock its live process holds (`crate::live`),
//! and three records at fixed offsets, each written in place by its own writer and never
//! synced (they matter only while the member lives, and readers share the page cache):
//!
//! ```text
//! 0      the lease's holder (pid, start, host), written when the lease is taken or handed on
//! 512    where its newest roster record is (`roster_index`), with every roster update of it
//! 1024   its token usage (presence), after each model reply
//! 4096   what it is doing (presence), per tool call; the file is cut to this record's end
//! ```
//!
//! A record is a header line `troupe-presence <len> <fnv1a-64 hex>` and the value's `len` bytes.
//! A writer writes its record at its offset without truncating first, so a reader racing it may
//! see a mix of the old and the new record; the length and checksum tell, and the reader reads
//! again (a few times, then treats the record as missing: presence is only a hint for the
//! dashboard, and a holder still being written reads as unknown, as before). A region never
//! written (a hole, or past the end) reads as missing. "Doing nothing" is an empty value.
//!
//! An older troupe kept presence in `presence/<agent>.{doing,usage}` and only the holder's JSON
//! line in the lock file; both are still read (see `presence` and `crate::live`).

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::StoreError;

/// Where the lease holder's record starts.
pub(crate) const HOLDER_AT: u64 = 0;
/// Where the place of the member's newest roster record starts.
pub(crate) const ROSTER_AT: u64 = 512;
/// Where the token usage's record starts.
pub(crate) const USAGE_AT: u64 = 1024;
/// Where what the member is doing starts; the last record, of any length.
pub(crate) const DOING_AT: u64 = 4096;

/// First word of a record's header line.
const MAGIC: &str = "troupe-presence";
/// Reads of a record that keep finding a write in progress before it is taken as missing.
const READ_TRIES: usize = 3;
/// Bytes read at first: a header and a short value.
const FIRST_READ: usize = 512;

/// The region of the record starting at `at`: its end, or `None` for the last one.
fn end_of(at: u64) -> Option<u64> {
    match at {
        HOLDER_AT => Some(ROSTER_AT),
        ROSTER_AT => Some(USAGE_AT),
        USAGE_AT => Some(DOING_AT),
        _ => None,
    }
}

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

/// Writes the record of `value` at `at` in `file` (at `path`, for errors), cutting the file to
/// its end when it is the last record.
pub(crate) fn write(file: &File, path: &Path, at: u64, value: &[u8]) -> Result<(), StoreError> {
    let record = encode(value);
    let end = at + record.len() as u64;
    if end_of(at).is_some_and(|limit| end > limit) {
        return Err(StoreError::io("write", path)(std::io::Error::new(
            ErrorKind::InvalidInput,
            format!("a record of {} bytes does not fit its place", record.len()),
        )));
    }
    file.write_all_at(&record, at)
        .map_err(StoreError::io("write", path))?;
    if end_of(at).is_none() {
        file.set_len(end)
            .map_err(StoreError::io("truncate", path))?;
    }
    Ok(())
}

/// The value of the record at `at` in `file`; `None` when it is missing, foreign, or still torn
/// after a few reads.
pub(crate) fn read(file: &File, at: u64) -> Option<Vec<u8>> {
    let first = end_of(at).map_or(FIRST_READ, |end| FIRST_READ.min((end - at) as usize));
    for _ in 0..READ_TRIES {
        let mut bytes = vec![0u8; first];
        let n = read_at(file, &mut bytes, at)?;
        bytes.truncate(n);
        let Some((start, len)) = header(&bytes) else {
            if bytes.first().is_none_or(|b| *b == 0) {
                return None; // never written
            }
            std::thread::yield_now();
            continue;
        };
        if start + len > bytes.len() && n == first {
            bytes.resize(start + len, 0);
            let more = read_at(file, &mut bytes[first..], at + first as u64)?;
            bytes.truncate(first + more);
        }
        if let Some(value) = decode(&bytes) {
            return Some(value.to_vec());
        }
        std::thread::yield_now();
    }
    None
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
        // A longer old record's tail left behind by a write not yet cut to length.
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
    fn the_three_records_share_one_file_without_disturbing_each_other() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("bob.lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(&file, USAGE_AT), None, "past the end");
        ok(write(&file, &path, DOING_AT, &[b'x'; 3000]));
        assert_eq!(read(&file, USAGE_AT), None, "a hole");
        ok(write(&file, &path, HOLDER_AT, b"{\"pid\":1}"));
        ok(write(&file, &path, USAGE_AT, b"{\"usage\":{}}"));
        ok(write(&file, &path, DOING_AT, b"short"));
        assert_eq!(read(&file, HOLDER_AT).as_deref(), Some(&b"{\"pid\":1}"[..]));
        assert_eq!(
            read(&file, USAGE_AT).as_deref(),
            Some(&b"{\"usage\":{}}"[..])
        );
        assert_eq!(read(&file, DOING_AT).as_deref(), Some(&b"short"[..]));
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        assert_eq!(
            len,
            DOING_AT + encode(b"short").len() as u64,
            "cut to the last"
        );
        // A record too long for its place is refused, and the one there stays.
        assert!(write(&file, &path, USAGE_AT, &[b'u'; 3100]).is_err());
        assert_eq!(
            read(&file, USAGE_AT).as_deref(),
            Some(&b"{\"usage\":{}}"[..])
        );
    }
}
