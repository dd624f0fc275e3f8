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
//! Durability: a record that changes more than the volatile fields (`usage`, `usage_by_model`,
//! `last_seen`, `activity`) is synced before the update returns; one that changes only those is
//! left in the page cache (a later synced record or the compaction makes it durable; losing it
//! in a power cut loses nothing that matters). The log is compacted — rewritten atomically as
//! the roster without its members, then one record per member — once it holds more records
//! than `max(256, 3 × members)`. A member's update reads that member's newest record where the
//! index says (`roster_index`) rather than everything appended since this instance last read.
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
use std::sync::{MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use troupe_protocol::{Member, Roster};

use super::roster_index::checksum;
use super::sync::SyncRoster;
use super::{jsonl, to_line, FileStore, SyncKind};
use crate::error::StoreError;
use troupe_durable::lock::LockGuard;

/// The log, relative to the team directory.
pub(super) const LOG: &str = "roster.jsonl";
/// The whole-file roster of older versions, read until the first update migrates it.
pub(super) const LEGACY: &str = "roster.json";
/// Held by every writer of the log.
pub(super) const LOCK: &str = "roster.lock";
/// Fewest records a log holds before it is compacted.
const COMPACT_MIN: usize = 256;

/// Most records a log of `members` members holds before it is compacted (a compacted log holds
/// one per member and one more).
pub(super) fn compact_limit(members: usize) -> usize {
    COMPACT_MIN.max(3 * members)
}

/// One line of the log, as read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Record {
    /// The whole roster.
    Roster(Roster),
    /// Members added or changed, whole.
    Members(Vec<Member>),
}

/// One line of the log, as written (borrowing what it writes).
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RecordRef<'a> {
    Roster(&'a Roster),
    Members(Vec<&'a Member>),
}

/// Whether a record must be synced before its update returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Weight {
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
    pub(super) file: Option<(u64, u64)>,
    /// Offset just past the last complete line applied.
    pub(super) offset: u64,
    /// Lines in the log so far.
    pub(super) records: usize,
    /// The roster as of `offset`.
    pub(super) roster: Roster,
    /// The log read, kept open.
    pub(super) log: Option<File>,
    /// Offset of the last record read that was not one member's (see `roster_index`).
    pub(super) barrier: u64,
    /// The one-member records read, and their bytes: how long such a record is, on average.
    pub(super) member_records: u64,
    pub(super) member_bytes: u64,
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

/// True when `a` and `b` differ at most in usage (in total and by model), last sign of life
/// and activity.
pub(super) fn only_volatile_differs(b: &Member, a: &Member) -> bool {
    let mut same = a.clone();
    same.usage = b.usage;
    same.usage_by_model.clone_from(&b.usage_by_model);
    same.last_seen = b.last_seen;
    same.activity.clone_from(&b.activity);
    same == *b
}

impl FileStore {
    pub(super) fn roster_path(&self, name: &str) -> PathBuf {
        self.inner.dir.join(name)
    }

    pub(super) fn roster_cache(&self) -> MutexGuard<'_, RosterCache> {
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
    pub(super) fn catch_up(&self, cache: &mut RosterCache) -> Result<(), StoreError> {
        let path = self.roster_path(LOG);
        // The log read last is kept open: while the path still names it, a look at the path
        // (no open) says whether anything was appended.
        if let (Some(id), Some(log)) = (cache.file, cache.log.take()) {
            match fs::metadata(&path) {
                Ok(meta) if (meta.dev(), meta.ino()) == id && meta.len() >= cache.offset => {
                    return self.read_appended(cache, log, meta.len());
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("stat", path)(e)),
            }
        }
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
        self.read_appended(cache, file, meta.len())
    }

    /// Applies what `file` (the log `cache` follows, `len` bytes long now) holds past
    /// `cache.offset`, and keeps it open in `cache`.
    fn read_appended(
        &self,
        cache: &mut RosterCache,
        file: File,
        len: u64,
    ) -> Result<(), StoreError> {
        let path = self.roster_path(LOG);
        let meta_len = len;
        if meta_len == cache.offset {
            cache.log = Some(file);
            return Ok(());
        }
        let mut bytes = vec![0u8; usize::try_from(meta_len - cache.offset).unwrap_or(0)];
        file.read_exact_at(&mut bytes, cache.offset)
            .map_err(StoreError::io("read", &path))?;
        // A line still being written (or torn by a crash) is left for later.
        let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(keep);
        let chunk = jsonl::Chunk {
            start: cache.offset,
            bytes,
            file_len: meta_len,
        };
        for (offset, line) in chunk.lines() {
            match jsonl::parse_line::<Record>(offset, line) {
                Ok(Record::Members(members)) if members.len() == 1 => {
                    cache.member_records += 1;
                    cache.member_bytes += line.len() as u64 + 1;
                    Record::Members(members).apply(&mut cache.roster);
                }
                Ok(record) => {
                    cache.barrier = offset;
                    record.apply(&mut cache.roster);
                }
                Err(bad) => {
                    tracing::warn!(path = %path.display(), offset, error = %bad.error, "skipping corrupt roster record")
                }
            }
            cache.records += 1;
        }
        cache.offset = chunk.end();
        cache.log = Some(file);
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

    /// Writes the log anew (atomically, and durably when `weight` asks) and points the cache
    /// and the index at it; a `roster.json` left by an older version goes once the log is
    /// written. The new log is the roster without its members as one record, then one record
    /// per member in order: what an older version reads as the same roster, and what lets the
    /// index point at each member's record.
    fn rewrite_log(
        &self,
        lock: &File,
        cache: &mut RosterCache,
        roster: Roster,
        weight: Weight,
    ) -> Result<(), StoreError> {
        let path = self.roster_path(LOG);
        let head = Roster {
            team: roster.team.clone(),
            lead: roster.lead.clone(),
            members: Vec::new(),
            lead_usage: roster.lead_usage.clone(),
        };
        let mut bytes = to_line("roster", &RecordRef::Roster(&head))?;
        let head_len = bytes.len() as u64;
        let mut places = Vec::with_capacity(roster.members.len());
        for m in &roster.members {
            let line = to_line("roster record", &RecordRef::Members(vec![m]))?;
            places.push((bytes.len() as u64, line.len() as u64, checksum(&line)));
            bytes.extend_from_slice(&line);
        }
        match weight {
            Weight::Durable => self.replace_file(&path, &bytes)?,
            Weight::Volatile => troupe_durable::atomic::write_atomic_with(
                &path,
                &bytes,
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
        let members = roster.members.len() as u64;
        *cache = RosterCache {
            file: Some((meta.dev(), meta.ino())),
            offset: bytes.len() as u64,
            records: 1 + roster.members.len(),
            roster,
            log: None,
            barrier: 0,
            member_records: members,
            member_bytes: bytes.len() as u64 - head_len,
        };
        self.index_rewritten(lock, cache, &places);
        Ok(())
    }

    /// Runs `write` holding the roster lock: this instance's writers one at a time, other
    /// instances and processes kept out by `flock` on `roster.lock`, whose handle is kept open
    /// (and read and written: it holds the index's `LogInfo`).
    pub(super) fn with_roster_lock<R>(
        &self,
        write: impl FnOnce(&File) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let path = self.roster_path(LOCK);
        let mut slot = self
            .inner
            .roster_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            let file = match slot.take() {
                Some(file) => file,
                None => OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .map_err(StoreError::io("open lock file", &path))?,
            };
            let guard = LockGuard::exclusive(&file, &path)?;
            // A handle on a lock file since removed (the team folder made anew) locks nothing.
            let same = match (file.metadata(), fs::metadata(&path)) {
                (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
                _ => false,
            };
            if same {
                let result = write(&file);
                drop(guard);
                *slot = Some(file);
                return result;
            }
        }
    }

    /// Appends one record to the log; the caller holds the roster lock and has caught up, so
    /// whatever follows `cache.offset` is a torn line of a writer that died (never reported
    /// written) and is cut off first.
    pub(super) fn append_record(
        &self,
        cache: &RosterCache,
        line: &[u8],
    ) -> Result<File, StoreError> {
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

    #[cfg(test)]
    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError> {
        let (roster, written) = self.write_roster(f)?;
        // Synced after the lock is released, so that the records of other writers join the
        // same group commit; never reported written before the sync returned.
        self.sync_roster(written)?;
        Ok(roster)
    }

    fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        let mut cache = self.roster_cache();
        self.catch_up(&mut cache)?;
        Ok(cache.roster.get(name).cloned())
    }

    #[cfg(test)]
    fn update_member(
        &self,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<Option<Member>, StoreError> {
        let (member, written) = self.write_member(name, f)?;
        self.sync_roster(written)?;
        Ok(member)
    }
}

impl FileStore {
    /// Syncs the roster log a write handed back (nothing when it needs no sync).
    pub(super) fn sync_roster(&self, written: Option<File>) -> Result<(), StoreError> {
        match written {
            Some(file) => self.sync(file, &self.roster_path(LOG), SyncKind::Data),
            None => Ok(()),
        }
    }

    /// `update_roster` up to its sync: the roster as written, and the log to sync when the
    /// record must be durable.
    pub(super) fn write_roster(
        &self,
        f: &mut dyn FnMut(&mut Roster),
    ) -> Result<(Roster, Option<File>), StoreError> {
        self.with_roster_lock(|lock| {
            let mut cache = self.roster_cache();
            self.catch_up(&mut cache)?;
            let mut roster = cache.roster.clone();
            f(&mut roster);
            let Some((record, weight)) = record_for(&cache.roster, &roster) else {
                return Ok((roster, None));
            };
            let compact = cache.records + 1 > compact_limit(roster.members.len());
            if cache.file.is_none() || compact {
                // A roster created with no members yet (a team opened, its lead named) is left
                // in the page cache: lost in a crash, it is what the next open writes again, so
                // a plain `-p` run syncs only its transcript. Anything with members is synced.
                let weight = if cache.file.is_none() && roster.members.is_empty() {
                    Weight::Volatile
                } else {
                    Weight::Durable
                };
                self.rewrite_log(lock, &mut cache, roster.clone(), weight)?;
                return Ok((roster, None));
            }
            let one = match &record {
                RecordRef::Members(members) if members.len() == 1 => Some(members[0].name.clone()),
                _ => None,
            };
            let line = to_line("roster record", &record)?;
            self.index_append(lock, &cache, &line, one.as_deref())?;
            let file = self.append_record(&cache, &line)?;
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.roster = roster.clone();
            Ok((roster, (weight == Weight::Durable).then_some(file)))
        })
    }

    /// `update_member` up to its sync: one member copied and changed, one `members` record
    /// appended (the same record [`record_for`] would write for this change, without copying
    /// the roster), and the log to sync when it must be durable. The member's newest record is
    /// read where the index says (`roster_index`), else by catching up.
    pub(super) fn write_member(
        &self,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<(Option<Member>, Option<File>), StoreError> {
        self.with_roster_lock(|lock| {
            if let Some(done) = self.update_member_indexed(lock, name, &mut *f)? {
                return Ok(done);
            }
            let mut cache = self.roster_cache();
            self.catch_up(&mut cache)?;
            let Some(pos) = cache.roster.members.iter().position(|m| m.name == name) else {
                return Ok((None, None));
            };
            let before = &cache.roster.members[pos];
            let mut after = before.clone();
            f(&mut after);
            after.name.clone_from(&before.name);
            if after == *before {
                return Ok((Some(after), None));
            }
            let weight = if only_volatile_differs(before, &after) {
                Weight::Volatile
            } else {
                Weight::Durable
            };
            let compact = cache.records + 1 > compact_limit(cache.roster.members.len());
            if cache.file.is_none() || compact {
                let mut roster = cache.roster.clone();
                roster.members[pos] = after.clone();
                self.rewrite_log(lock, &mut cache, roster, Weight::Durable)?;
                return Ok((Some(after), None));
            }
            let line = to_line("roster record", &RecordRef::Members(vec![&after]))?;
            self.index_append(lock, &cache, &line, Some(name))?;
            let file = self.append_record(&cache, &line)?;
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.roster.members[pos] = after.clone();
            Ok((Some(after), (weight == Weight::Durable).then_some(file)))
        })
    }
}

#[cfg(test)]
#[path = "roster_tests.rs"]
mod tests;
