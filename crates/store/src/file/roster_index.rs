//! The roster log's index: where each member's newest record is, so that a member update reads
//! that one record instead of every record the other members appended since this store
//! instance last read the log. With a thousand members each updating itself from a handle of
//! its own, catching up made every update cost the whole team's updates, and a round of the
//! team quadratic; with the index an update costs the same at any team size, as on NATS.
//!
//! Two records, volatile (written in place under the roster lock, never synced, each a
//! checksummed record, see `records`) and bound to this boot (a power cut may lose them while
//! the log's synced records survive; a record of another boot is ignored):
//! - `roster.lock` holds the log's identity (device, inode and a generation that every rewrite
//!   of the log changes), its *barrier* — the offset of its last record that was not one
//!   member's (the whole roster, or several members at once) — and the length past which the
//!   log may need compacting (`compact_at`).
//! - each member's slot in the member table (`members`, see `slots`) holds the place of its
//!   newest record: the log's identity, the record's offset, length and checksum.
//!
//! A writer records a place *before* it appends there: the index may point where a record was
//! never written (a writer died in between), which the checksum refuses, but never to an older
//! record than the newest. A place is trusted when the log's identity matches, the record lies
//! at or after the barrier, inside the log, and its bytes match the checksum; anything else
//! (and an older troupe's log, which has no index) takes the ordinary way: read the log up to
//! its end, then write the index anew. Writers of an older version do not keep the index, so
//! one running team must not mix them with this one.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use troupe_protocol::Member;

use super::records::{self, LOG_INFO, ROSTER};
use super::roster::{compact_limit, only_volatile_differs, Record, RecordRef, RosterCache, Weight};
use super::slots::Table;
use super::{jsonl, to_line, FileStore};
use crate::error::StoreError;

/// First word of both records' values.
const MAGIC: &str = "troupe-roster-index";
/// A member's record is at least this long (its name, role, status and epoch), so a log of
/// `n` more records is at least `n` times this: the bound `compact_at` is figured with.
pub(super) const MIN_RECORD: u64 = 128;

/// This boot's id; `None` where the OS does not tell it, and then there is no index.
fn boot() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(crate::proc_stamp::boot_id).as_deref()
}

/// Which log a place is in: its device and inode, and the generation of its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LogId {
    pub dev: u64,
    pub ino: u64,
    pub generation: u64,
}

/// What `roster.lock` says about the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LogInfo {
    pub id: LogId,
    /// Records before this offset may be older than a whole-roster or many-member record.
    pub barrier: u64,
    /// Past this length the log may hold more records than it should: read it and see.
    pub compact_at: u64,
}

/// Where one member's newest record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub id: LogId,
    pub offset: u64,
    pub len: u64,
    pub sum: u64,
}

/// FNV-1a, 64 bits, of a record's bytes.
pub(super) fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The numbers after the magic word and this boot's id in a record's value.
fn numbers<const N: usize>(value: &[u8]) -> Option<[u64; N]> {
    let text = std::str::from_utf8(value).ok()?;
    let mut words = text.split(' ');
    if words.next()? != MAGIC || words.next()? != boot()? {
        return None;
    }
    let mut out = [0u64; N];
    for slot in &mut out {
        *slot = words.next()?.parse().ok()?;
    }
    words.next().is_none().then_some(out)
}

fn value(numbers: &[u64]) -> Option<Vec<u8>> {
    let mut text = format!("{MAGIC} {}", boot()?);
    for n in numbers {
        text.push_str(&format!(" {n}"));
    }
    Some(text.into_bytes())
}

impl LogInfo {
    /// What `lock` (the open `roster.lock`) says, when it says it for this boot.
    pub fn read(lock: &File) -> Option<LogInfo> {
        let [dev, ino, generation, barrier, compact_at] =
            numbers(&records::read(lock, 0, LOG_INFO)?)?;
        Some(LogInfo {
            id: LogId {
                dev,
                ino,
                generation,
            },
            barrier,
            compact_at,
        })
    }

    /// Records this in `lock`; nothing where there is no index.
    pub fn write(&self, lock: &File, path: &Path) -> Result<(), StoreError> {
        let id = self.id;
        let numbers = [id.dev, id.ino, id.generation, self.barrier, self.compact_at];
        match value(&numbers) {
            Some(v) => records::write(lock, path, 0, LOG_INFO, &v),
            None => Ok(()),
        }
    }
}

impl Place {
    /// The place recorded in the member's slot at `base` of `table`.
    pub fn read(table: &Table, base: u64) -> Option<Place> {
        let [dev, ino, generation, offset, len, sum] = numbers(&table.read(base, ROSTER)?)?;
        Some(Place {
            id: LogId {
                dev,
                ino,
                generation,
            },
            offset,
            len,
            sum,
        })
    }

    /// Records this in the member's slot at `base` of `table`.
    pub fn write(&self, table: &Table, base: u64) -> Result<(), StoreError> {
        let id = self.id;
        let numbers = [
            id.dev,
            id.ino,
            id.generation,
            self.offset,
            self.len,
            self.sum,
        ];
        match value(&numbers) {
            Some(v) => table.write(base, ROSTER, &v),
            None => Ok(()),
        }
    }

    /// The record this place names in `log` (`log_len` bytes long, ending in a whole line), if
    /// it is there and the index may be trusted for it.
    pub fn record(&self, info: &LogInfo, log: &File, log_len: u64) -> Option<Vec<u8>> {
        if self.id != info.id || self.offset < info.barrier || self.offset + self.len > log_len {
            return None;
        }
        let mut bytes = vec![0u8; usize::try_from(self.len).ok()?];
        log.read_exact_at(&mut bytes, self.offset).ok()?;
        (checksum(&bytes) == self.sum && bytes.last() == Some(&b'\n')).then_some(bytes)
    }
}

/// The identity of the open log `file` under generation `generation`.
pub(super) fn log_id(file: &File, generation: u64) -> std::io::Result<(LogId, u64)> {
    let meta = file.metadata()?;
    Ok((
        LogId {
            dev: meta.dev(),
            ino: meta.ino(),
            generation,
        },
        meta.len(),
    ))
}

/// True when the last byte of `log` (`len` long) ends a line: no torn record to cut off.
pub(super) fn ends_whole(log: &File, len: u64) -> bool {
    if len == 0 {
        return true;
    }
    let mut last = [0u8; 1];
    log.read_exact_at(&mut last, len - 1).is_ok() && last[0] == b'\n'
}

/// A fresh generation: the time, so a log made anew (a lost `roster.lock`) never matches an
/// index written for an earlier one.
pub(super) fn fresh_generation() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl FileStore {
    /// The member table and where `name`'s slot starts; one is claimed for it if `claim`.
    fn member_slot(
        &self,
        name: &str,
        claim: bool,
    ) -> Result<Option<(Arc<Table>, u64)>, StoreError> {
        let Some(table) = self.member_table(claim)? else {
            return Ok(None);
        };
        Ok(table.slot(name, claim)?.map(|base| (table, base)))
    }

    /// The index of the log as `cache` read it (`lock` is the open `roster.lock`): the
    /// generation `lock` records for this log, or a new one.
    fn index_for(&self, lock: &File, cache: &RosterCache) -> Option<LogInfo> {
        let (dev, ino) = cache.file?;
        let generation = LogInfo::read(lock)
            .filter(|i| (i.id.dev, i.id.ino) == (dev, ino))
            .map_or_else(fresh_generation, |i| i.id.generation);
        let average = cache
            .member_bytes
            .checked_div(cache.member_records)
            .unwrap_or(MIN_RECORD)
            .max(MIN_RECORD);
        let remaining = compact_limit(cache.roster.members.len()).saturating_sub(cache.records);
        Some(LogInfo {
            id: LogId {
                dev,
                ino,
                generation,
            },
            barrier: cache.barrier,
            compact_at: cache.offset + remaining as u64 * average,
        })
    }

    /// Before `line` is appended at `cache.offset` (the caller holds the roster lock and has
    /// caught up): records its place in the member's file when it is one member's record (`one`),
    /// else moves the barrier to it. A place that cannot be written moves the barrier instead;
    /// the update fails only when neither can be written.
    pub(super) fn index_append(
        &self,
        lock: &File,
        cache: &RosterCache,
        line: &[u8],
        one: Option<&str>,
    ) -> Result<(), StoreError> {
        let Some(mut info) = self.index_for(lock, cache) else {
            return Ok(());
        };
        let placed = one.is_some_and(|name| {
            let place = Place {
                id: info.id,
                offset: cache.offset,
                len: line.len() as u64,
                sum: checksum(line),
            };
            let written = self.member_slot(name, true).and_then(|slot| match slot {
                Some((table, base)) => place.write(&table, base),
                None => Err(StoreError::io("claim a slot for", name)(
                    ErrorKind::NotFound.into(),
                )),
            });
            match written {
                Ok(()) => true,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot index a roster record; moving the barrier");
                    false
                }
            }
        });
        if !placed {
            info.barrier = cache.offset;
        }
        info.write(lock, &self.roster_path(super::roster::LOCK))
    }

    /// After the log was written anew: every member's place (`places`, in roster order), then
    /// the log's info. Best effort: a member whose place cannot be written is found by catching
    /// up, and when any could not be, the info is left as it was (naming the old log, so trusted
    /// for nothing).
    pub(super) fn index_rewritten(
        &self,
        lock: &File,
        cache: &RosterCache,
        places: &[(u64, u64, u64)],
    ) {
        let Some(mut info) = self.index_for(lock, cache) else {
            return;
        };
        info.id.generation = fresh_generation();
        for (member, &(offset, len, sum)) in cache.roster.members.iter().zip(places) {
            let place = Place {
                id: info.id,
                offset,
                len,
                sum,
            };
            let written = self
                .member_slot(&member.name, true)
                .and_then(|slot| match slot {
                    Some((table, base)) => place.write(&table, base),
                    None => Err(StoreError::io("claim a slot for", &member.name)(
                        ErrorKind::NotFound.into(),
                    )),
                });
            if let Err(e) = written {
                tracing::debug!(error = %e, "cannot index the compacted roster");
                return;
            }
        }
        if let Err(e) = info.write(lock, &self.roster_path(super::roster::LOCK)) {
            tracing::debug!(error = %e, "cannot index the compacted roster");
        }
    }

    /// `update_member` by the index: the member's newest record read where its place says,
    /// changed by `f`, appended, its new place recorded first. `None` when the index cannot be
    /// trusted for it (then nothing was read into `f` nor written).
    #[allow(clippy::type_complexity)] // the same pair `update_member` computes
    pub(super) fn update_member_indexed(
        &self,
        lock: &File,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<Option<(Option<Member>, Option<File>)>, StoreError> {
        let Some(info) = LogInfo::read(lock) else {
            return Ok(None);
        };
        let path = self.roster_path(super::roster::LOG);
        let log = match OpenOptions::new().read(true).append(true).open(&path) {
            Ok(log) => log,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("open", path)(e)),
        };
        let (id, len) = log_id(&log, info.id.generation).map_err(StoreError::io("stat", &path))?;
        if id != info.id || len >= info.compact_at || !ends_whole(&log, len) {
            return Ok(None);
        }
        let Ok(Some((table, base))) = self.member_slot(name, false) else {
            return Ok(None);
        };
        let Some(place) = Place::read(&table, base) else {
            return Ok(None);
        };
        let Some(bytes) = place.record(&info, &log, len) else {
            return Ok(None);
        };
        let before = match jsonl::parse_line::<Record>(place.offset, &bytes[..bytes.len() - 1]) {
            Ok(Record::Members(mut members)) if members.len() == 1 && members[0].name == name => {
                members.swap_remove(0)
            }
            _ => return Ok(None),
        };
        let mut after = before.clone();
        f(&mut after);
        after.name.clone_from(&before.name);
        if after == before {
            return Ok(Some((Some(after), None)));
        }
        let weight = if only_volatile_differs(&before, &after) {
            Weight::Volatile
        } else {
            Weight::Durable
        };
        let line = to_line("roster record", &RecordRef::Members(vec![&after]))?;
        let next = Place {
            id,
            offset: len,
            len: line.len() as u64,
            sum: checksum(&line),
        };
        next.write(&table, base)?;
        (&log)
            .write_all(&line)
            .map_err(StoreError::io("append to", &path))?;
        // This instance's roster stays right when it had read the log to its end.
        let mut cache = self.roster_cache();
        if cache.file == Some((id.dev, id.ino)) && cache.offset == len {
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.member_records += 1;
            cache.member_bytes += line.len() as u64;
            if let Some(slot) = cache.roster.get_mut(name) {
                *slot = after.clone();
            }
        }
        Ok(Some((
            Some(after),
            (weight == Weight::Durable).then_some(log),
        )))
    }
}
