//! Presence: what each agent is doing and its running token usage, volatile and best-effort.
//! Both are records in the member's slot of the team's member table, `members` (see
//! `slots` and `records`), beside its lease: rewritten in place, never synced (presence changes
//! many times a round; syncing it would cost more than the data is worth, and it is only a hint
//! for the dashboard), and no file of its own (at a thousand members, the file system's inode
//! allocation showed up in profiles).
//!
//! Migration: an older troupe kept each member's records in `live/<agent>.lock`, and one before
//! it in `presence/<agent>.{doing,usage}`. Their values are read too (a member's slot wins); the
//! first presence write of a store instance removes the `presence/` folder.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::records::{self, Region, DOING, HEADER_MAX, LEGACY_DOING, LEGACY_USAGE, USAGE};
use super::slots::LEGACY_LIVE;
use super::sync::SyncPresence;
use super::{check_agent, FileStore};
use crate::error::StoreError;
use troupe_protocol::AgentUsage;

/// An older version's member files' suffix.
const SUFFIX: &str = ".lock";
/// An older version's presence folder and its files' suffixes.
const LEGACY: &str = "presence";
const LEGACY_DOING_SUFFIX: &str = ".doing";
const LEGACY_USAGE_SUFFIX: &str = ".usage";

/// `text` cut (at a character's boundary) to what a record in `region` holds.
fn fit(text: &str, region: Region) -> &str {
    let room = (region.end - region.start - HEADER_MAX) as usize;
    if text.len() <= room {
        return text;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl FileStore {
    /// Removes an older version's presence folder, once per store instance.
    fn forget_legacy_presence(&self) {
        if self
            .inner
            .legacy_presence_gone
            .swap(true, Ordering::Relaxed)
        {
            return;
        }
        let dir = self.inner.dir.join(LEGACY);
        match fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(path = %dir.display(), "presence moved into live/"),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => tracing::debug!(path = %dir.display(), error = %e, "old presence left"),
        }
    }

    /// Every member's record in `region`, by name, with an older version's values for members
    /// that have none: its member file's record in `legacy_region`, or its file ending in
    /// `legacy_suffix` in the older presence folder.
    fn read_presence(
        &self,
        region: Region,
        legacy_region: Region,
        legacy_suffix: &str,
    ) -> Result<BTreeMap<String, Vec<u8>>, StoreError> {
        let mut values = BTreeMap::new();
        if let Some(table) = self.member_table(false)? {
            for (agent, base) in table.members() {
                if let Some(value) = table.read(base, region) {
                    values.insert(agent, value);
                }
            }
        }
        for (agent, path) in files_in(&self.inner.dir.join(LEGACY_LIVE), SUFFIX)? {
            if values.contains_key(&agent) {
                continue;
            }
            let Ok(file) = File::open(&path) else {
                continue; // removed since it was listed
            };
            if let Some(value) = records::read(&file, 0, legacy_region) {
                values.insert(agent, value);
            }
        }
        if !self.inner.legacy_presence_gone.load(Ordering::Relaxed) {
            for (agent, path) in files_in(&self.inner.dir.join(LEGACY), legacy_suffix)? {
                if values.contains_key(&agent) {
                    continue;
                }
                let value = fs::read(&path)
                    .ok()
                    .and_then(|bytes| records::decode(&bytes).map(<[u8]>::to_vec));
                if let Some(value) = value {
                    values.insert(agent, value);
                }
            }
        }
        Ok(values)
    }
}

/// The files in `dir` whose names end in `suffix`, by the name before it.
fn files_in(dir: &Path, suffix: &str) -> Result<Vec<(String, PathBuf)>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("list", dir)(e)),
    };
    Ok(entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let agent = name.strip_suffix(suffix)?.to_string();
            Some((agent, entry.path()))
        })
        .collect())
}

impl SyncPresence for FileStore {
    fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        check_agent(agent)?;
        // Nothing to clear when there never was a slot.
        let claim = doing.is_some();
        let Some(table) = self.member_table(claim)? else {
            return Ok(());
        };
        let Some(base) = table.slot(agent, claim)? else {
            return Ok(());
        };
        self.forget_legacy_presence();
        table.write(
            base,
            DOING,
            fit(doing.unwrap_or_default(), DOING).as_bytes(),
        )
    }

    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        Ok(self
            .read_presence(DOING, LEGACY_DOING, LEGACY_DOING_SUFFIX)?
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(agent, value)| (agent, String::from_utf8_lossy(&value).into_owned()))
            .collect())
    }

    fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        check_agent(agent)?;
        let text = serde_json::to_vec(usage).map_err(|e| {
            StoreError::io("encode usage of", agent)(std::io::Error::new(ErrorKind::InvalidData, e))
        })?;
        let Some(table) = self.member_table(true)? else {
            return Ok(());
        };
        let Some(base) = table.slot(agent, true)? else {
            return Ok(());
        };
        self.forget_legacy_presence();
        table.write(base, USAGE, &text)
    }

    fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        // A value that does not parse (a foreign file) is skipped.
        Ok(self
            .read_presence(USAGE, LEGACY_USAGE, LEGACY_USAGE_SUFFIX)?
            .into_iter()
            .filter_map(|(agent, value)| Some((agent, serde_json::from_slice(&value).ok()?)))
            .collect())
    }
}

#[cfg(test)]
#[path = "presence_tests.rs"]
mod tests;
