//! The roster log `roster.jsonl`: one JSON record per line, appended under the exclusive lock
//! on `roster.lock`, read by anyone without a lock (only complete lines count).
//!
//! A record is either the whole roster (`{"roster": {...}}`: the first line, written when the
//! log is created or compacted) or the members one update added or changed, whole
//! (`{"members": [...]}`: a known name replaces that member, a new one goes at the end). An
//! update that changes anything else (the team, the lead, the members' order, a removal) writes
//! the whole roster as its record. So a status change of one of a thousand members appends a
//! few hundred bytes instead of rewriting the file, and every store instance keeps the roster it
//! read in memory and reads only what was appended since (the log's inode tells it when the
//! log was compacted and must be read again).
//!
//! Durability: a record that changes more than the volatile fields (`usage`, `last_seen`,
//! `activity`) is synced before the update returns; one that changes only those is left in the
//! page cache (a later synced record or the compaction makes it durable; losing it in a power
//! cut loses nothing that matters). The log is compacted — rewritten as one whole-roster record,
//! atomically — once it holds more records than `max(256, 2 × members)`.
//!
//! Migration: a team written by an older troupe has `roster.json` (the whole roster, rewritten
//! on every change). While no log exists it is what is read; the first update writes the log
//! (durably) and then removes `roster.json`. A corrupt `roster.json` is an error naming the
//! file, on read and on update alike, and is never overwritten; a corrupt line in the log (a
//! record torn by a power cut before its sync, so never reported written) is skipped with a
//! warning, as in every other log.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::MutexGuard;

use serde::{Deserialize, Serialize};
use troupe_protocol::{Member, Roster};

use super::sync::SyncRoster;
use super::{jsonl, to_line, FileStore, SyncKind};
use crate::error::StoreError;
use troupe_durable::lock::LockFile;

/// The log, relative to the team directory.
pub(super) const LOG: &str = "roster.jsonl";
/// The whole-file roster of older versions, read until the first update migrates it.
pub(super) const LEGACY: &str = "roster.json";
/// Held by every writer of the log.
pub(super) const LOCK: &str = "roster.lock";
/// Fewest records a log holds before it is compacted.
const COMPACT_MIN: usize = 256;

/// One line of the log, as read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Record {
    /// The whole roster.
    Roster(Roster),
    /// Members added or changed, whole.
    Members(Vec<Member>),
}

/// One line of the log, as written (borrowing what it writes).
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum RecordRef<'a> {
    Roster(&'a Roster),
    Members(Vec<&'a Member>),
}

/// Whether a record must be synced before its update returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weight {
    /// Membership, status, epoch, reports: synced.
    Durable,
    /// Only usage, last sign of life or activity changed: left in the page cache.
    Volatile,
}

/// What this store instance last read of the roster.
#[derive(Debug, Default)]
pub(super) struct RosterCache {
    /// Device and inode of the log read; `None` when no log exists (the roster came from
    /// `roster.json`, or is empty).
    file: Option<(u64, u64)>,
    /// Offset just past the last complete line applied.
    offset: u64,
    /// Lines in the log so far.
    records: usize,
    /// The roster as of `offset`.
    roster: Roster,
}

impl Record {
    fn apply(self, roster: &mut Roster) {
        match self {
            Record::Roster(whole) => *roster = whole,
            Record::Members(members) => {
                for m in members {
                    match roster.get_mut(&m.name) {
                        Some(slot) => *slot = m,
                        None => roster.members.push(m),
                    }
                }
            }
        }
    }
}

/// The record that turns `before` into `after`, and how much it weighs; `None` when they are
/// equal.
fn record_for<'a>(before: &Roster, after: &'a Roster) -> Option<(RecordRef<'a>, Weight)> {
    if before == after {
        return None;
    }
    let whole = Some((RecordRef::Roster(after), Weight::Durable));
    if before.team != after.team
        || before.lead != after.lead
        || before.lead_usage != after.lead_usage
        || after.members.len() < before.members.len()
        || before
            .members
            .iter()
            .zip(&after.members)
            .any(|(b, a)| b.name != a.name)
    {
        return whole;
    }
    let added = &after.members[before.members.len()..];
    if !added.is_empty() {
        let mut names: std::collections::HashSet<&str> =
            before.members.iter().map(|m| m.name.as_str()).collect();
        if !added.iter().all(|m| names.insert(m.name.as_str())) {
            return whole; // a name twice: only the whole roster says which one is meant
        }
    }
    let mut weight = if added.is_empty() {
        Weight::Volatile
    } else {
        Weight::Durable
    };
    let mut changed = Vec::new();
    for (b, a) in before.members.iter().zip(&after.members) {
        if a != b {
            if !only_volatile_differs(b, a) {
                weight = Weight::Durable;
            }
            changed.push(a);
        }
    }
    changed.extend(added);
    Some((RecordRef::Members(changed), weight))
}

/// True when `a` and `b` differ at most in usage, last sign of life and activity.
fn only_volatile_differs(b: &Member, a: &Member) -> bool {
    let mut same = a.clone();
    same.usage = b.usage;
    same.last_seen = b.last_seen;
    same.activity.clone_from(&b.activity);
    same == *b
}

impl FileStore {
    fn roster_path(&self, name: &str) -> PathBuf {
        self.inner.dir.join(name)
    }

    fn roster_cache(&self) -> MutexGuard<'_, RosterCache> {
        // A panic while the cache was held leaves at worst a stale cache, which the next read
        // corrects from the file (the offset only moves after a line is applied).
        self.inner
            .roster
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Brings `cache` up to date with the files: the lines appended to the log since it was
    /// last read, all of it when it was compacted meanwhile, or `roster.json` when there is no
    /// log.
    fn catch_up(&self, cache: &mut RosterCache) -> Result<(), StoreError> {
        let path = self.roster_path(LOG);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                *cache = RosterCache {
                    roster: self.load_legacy_roster()?,
                    ..RosterCache::default()
                };
                return Ok(());
            }
            Err(e) => return Err(StoreError::io("open", path)(e)),
        };
        let meta = file.metadata().map_err(StoreError::io("stat", &path))?;
        let id = (meta.dev(), meta.ino());
        if cache.file != Some(id) || meta.len() < cache.offset {
            *cache = RosterCache {
                file: Some(id),
                roster: Roster::new(&self.inner.team, ""),
                ..RosterCache::default()
            };
        }
        if meta.len() == cache.offset {
            return Ok(());
        }
        let mut bytes = vec![0u8; usize::try_from(meta.len() - cache.offset).unwrap_or(0)];
        file.read_exact_at(&mut bytes, cache.offset)
            .map_err(StoreError::io("read", &path))?;
        // A line still being written (or torn by a crash) is left for later.
        let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(keep);
        let chunk = jsonl::Chunk {
            start: cache.offset,
            bytes,
            file_len: meta.len(),
        };
        for (offset, line) in chunk.lines() {
            match jsonl::parse_line::<Record>(offset, line) {
                Ok(record) => record.apply(&mut cache.roster),
                Err(bad) => {
                    tracing::warn!(path = %path.display(), offset, error = %bad.error, "skipping corrupt roster record")
                }
            }
            cache.records += 1;
        }
        cache.offset = chunk.end();
        Ok(())
    }

    /// `roster.json` of an older version, or an empty roster when there is none.
    fn load_legacy_roster(&self) -> Result<Roster, StoreError> {
        let path = self.roster_path(LEGACY);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                place: path.display().to_string(),
                detail: e.to_string(),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Roster::new(&self.inner.team, "")),
            Err(e) => Err(StoreError::io("read", path)(e)),
        }
    }

    /// Writes the log anew as one whole-roster record (atomically, and durably when `weight`
    /// asks) and points the cache at it; a `roster.json` left by an older version goes once the
    /// log is written.
    fn rewrite_log(
        &self,
        cache: &mut RosterCache,
        roster: Roster,
        weight: Weight,
    ) -> Result<(), StoreError> {
        let path = self.roster_path(LOG);
        let line = to_line("roster", &RecordRef::Roster(&roster))?;
        match weight {
            Weight::Durable => self.replace_file(&path, &line)?,
            Weight::Volatile => troupe_durable::atomic::write_atomic_with(
                &path,
                &line,
                troupe_durable::Durability::OsBuffered,
            )?,
        }
        let meta = fs::metadata(&path).map_err(StoreError::io("stat", &path))?;
        if cache.file.is_none() {
            let legacy = self.roster_path(LEGACY);
            match fs::remove_file(&legacy) {
                Ok(()) => {
                    tracing::info!(path = %legacy.display(), "roster migrated to roster.jsonl")
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("remove", legacy)(e)),
            }
        }
        *cache = RosterCache {
            file: Some((meta.dev(), meta.ino())),
            offset: line.len() as u64,
            records: 1,
            roster,
        };
        Ok(())
    }

    /// Appends one record to the log; the caller holds the roster lock and has caught up, so
    /// whatever follows `cache.offset` is a torn line of a writer that died (never reported
    /// written) and is cut off first.
    fn append_record(&self, cache: &RosterCache, line: &[u8]) -> Result<File, StoreError> {
        let path = self.roster_path(LOG);
        let mut file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(StoreError::io("open for append", &path))?;
        let len = file
            .metadata()
            .map_err(StoreError::io("stat", &path))?
            .len();
        if len > cache.offset {
            tracing::warn!(path = %path.display(), "partial last roster record found; removing it");
            file.set_len(cache.offset)
                .map_err(StoreError::io("truncate", &path))?;
        }
        file.write_all(line)
            .map_err(StoreError::io("append to", &path))?;
        Ok(file)
    }
}

impl SyncRoster for FileStore {
    fn roster(&self) -> Result<Roster, StoreError> {
        let mut cache = self.roster_cache();
        self.catch_up(&mut cache)?;
        Ok(cache.roster.clone())
    }

    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError> {
        let (roster, written) = {
            let _lock = LockFile::acquire(&self.roster_path(LOCK))?;
            let mut cache = self.roster_cache();
            self.catch_up(&mut cache)?;
            let mut roster = cache.roster.clone();
            f(&mut roster);
            let Some((record, weight)) = record_for(&cache.roster, &roster) else {
                return Ok(roster);
            };
            let compact = cache.records + 1 > COMPACT_MIN.max(2 * roster.members.len());
            if cache.file.is_none() || compact {
                // A roster created with no members yet (a team opened, its lead named) is left
                // in the page cache: lost in a crash, it is what the next open writes again, so
                // a plain `-p` run syncs only its transcript. Anything with members is synced.
                let weight = if cache.file.is_none() && roster.members.is_empty() {
                    Weight::Volatile
                } else {
                    Weight::Durable
                };
                self.rewrite_log(&mut cache, roster.clone(), weight)?;
                return Ok(roster);
            }
            let line = to_line("roster record", &record)?;
            let file = self.append_record(&cache, &line)?;
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.roster = roster.clone();
            (roster, (weight == Weight::Durable).then_some(file))
        };
        // Synced after the lock is released, so that the records of other writers join the
        // same group commit; never reported written before the sync returned.
        if let Some(file) = written {
            self.sync(file, &self.roster_path(LOG), SyncKind::Data)?;
        }
        Ok(roster)
    }

    fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        let mut cache = self.roster_cache();
        self.catch_up(&mut cache)?;
        Ok(cache.roster.get(name).cloned())
    }

    /// One member copied and changed, one `members` record appended: the same record
    /// [`record_for`] would write for this change, without copying the roster.
    fn update_member(
        &self,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<Option<Member>, StoreError> {
        let (member, written) = {
            let _lock = LockFile::acquire(&self.roster_path(LOCK))?;
            let mut cache = self.roster_cache();
            self.catch_up(&mut cache)?;
            let Some(pos) = cache.roster.members.iter().position(|m| m.name == name) else {
                return Ok(None);
            };
            let before = &cache.roster.members[pos];
            let mut after = before.clone();
            f(&mut after);
            after.name.clone_from(&before.name);
            if after == *before {
                return Ok(Some(after));
            }
            let weight = if only_volatile_differs(before, &after) {
                Weight::Volatile
            } else {
                Weight::Durable
            };
            let compact = cache.records + 1 > COMPACT_MIN.max(2 * cache.roster.members.len());
            if cache.file.is_none() || compact {
                let mut roster = cache.roster.clone();
                roster.members[pos] = after.clone();
                self.rewrite_log(&mut cache, roster, Weight::Durable)?;
                return Ok(Some(after));
            }
            let line = to_line("roster record", &RecordRef::Members(vec![&after]))?;
            let file = self.append_record(&cache, &line)?;
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.roster.members[pos] = after.clone();
            (after, (weight == Weight::Durable).then_some(file))
        };
        if let Some(file) = written {
            self.sync(file, &self.roster_path(LOG), SyncKind::Data)?;
        }
        Ok(Some(member))
    }
}

#[cfg(test)]
#[path = "roster_tests.rs"]
mod tests;
