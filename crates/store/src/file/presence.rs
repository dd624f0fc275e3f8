//! Presence: what each agent is doing and its running token usage, volatile and best-effort.
//! Both are records in the member's one file, `live/<agent>.lock` (see `member_file`), beside
//! its lease: rewritten in place, never synced (presence changes many times a round; syncing it
//! would cost more than the data is worth, and it is only a hint for the dashboard), and no
//! file of its own (at a thousand members, the file system's inode allocation showed up in
//! profiles).
//!
//! Migration: an older troupe kept presence in `presence/<agent>.{doing,usage}`, one record
//! each. While that folder exists its values are read too (a member's own file wins); the first
//! presence write of a store instance removes it.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::member_file::{self, DOING_AT, USAGE_AT};
use super::sync::SyncPresence;
use super::{check_agent, FileStore};
use crate::error::StoreError;
use troupe_protocol::AgentUsage;

/// The members' files, relative to the team directory.
const LIVE: &str = "live";
/// Their suffix.
const SUFFIX: &str = ".lock";
/// An older version's presence folder and its files' suffixes.
const LEGACY: &str = "presence";
const LEGACY_DOING: &str = ".doing";
const LEGACY_USAGE: &str = ".usage";

impl FileStore {
    pub(super) fn member_file_path(&self, agent: &str) -> PathBuf {
        self.inner.dir.join(LIVE).join(format!("{agent}{SUFFIX}"))
    }

    /// `agent`'s file for a presence write: the lease's when this process holds it, else
    /// opened (creating it, and its folder, when `create`); `None` when it does not exist and
    /// `create` is false.
    fn open_member_file(&self, agent: &str, create: bool) -> Result<Option<Arc<File>>, StoreError> {
        let path = self.member_file_path(agent);
        if let Some(file) = crate::live::held_file(&path) {
            self.forget_legacy_presence();
            return Ok(Some(file));
        }
        // Never truncated: the other records and the lease live in it.
        let open = || {
            OpenOptions::new()
                .write(true)
                .create(create)
                .truncate(false)
                .open(&path)
        };
        let file = match open() {
            Err(e) if e.kind() == ErrorKind::NotFound && !create => return Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let dir = self.inner.dir.join(LIVE);
                fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
                open()
            }
            other => other,
        }
        .map_err(StoreError::io("open", &path))?;
        self.forget_legacy_presence();
        Ok(Some(Arc::new(file)))
    }

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

    /// Every member's record at `at`, by name, with an older version's values (files ending in
    /// `legacy`) for members that have none.
    fn read_presence(
        &self,
        at: u64,
        legacy: &str,
    ) -> Result<BTreeMap<String, Vec<u8>>, StoreError> {
        let dir = self.inner.dir.join(LIVE);
        let mut values = BTreeMap::new();
        for (agent, path) in files_in(&dir, SUFFIX)? {
            // A member file this process holds is read through its open handle.
            let file = match crate::live::held_file(&path) {
                Some(file) => file,
                None => match File::open(&path) {
                    Ok(file) => std::sync::Arc::new(file),
                    Err(_) => continue, // removed since it was listed
                },
            };
            if let Some(value) = member_file::read(&file, at) {
                values.insert(agent, value);
            }
        }
        if !self.inner.legacy_presence_gone.load(Ordering::Relaxed) {
            for (agent, path) in files_in(&self.inner.dir.join(LEGACY), legacy)? {
                if values.contains_key(&agent) {
                    continue;
                }
                let value = fs::read(&path)
                    .ok()
                    .and_then(|bytes| member_file::decode(&bytes).map(<[u8]>::to_vec));
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
        // Nothing to clear when there never was a file.
        let Some(file) = self.open_member_file(agent, doing.is_some())? else {
            return Ok(());
        };
        let text = doing.unwrap_or_default();
        member_file::write(
            &file,
            &self.member_file_path(agent),
            DOING_AT,
            text.as_bytes(),
        )
    }

    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        Ok(self
            .read_presence(DOING_AT, LEGACY_DOING)?
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(agent, value)| (agent, String::from_utf8_lossy(&value).into_owned()))
            .collect())
    }

    fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        check_agent(agent)?;
        let path = self.member_file_path(agent);
        let text = serde_json::to_vec(usage).map_err(|e| {
            StoreError::io("encode", &path)(std::io::Error::new(ErrorKind::InvalidData, e))
        })?;
        let Some(file) = self.open_member_file(agent, true)? else {
            return Ok(());
        };
        member_file::write(&file, &path, USAGE_AT, &text)
    }

    fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        // A value that does not parse (a foreign file) is skipped.
        Ok(self
            .read_presence(USAGE_AT, LEGACY_USAGE)?
            .into_iter()
            .filter_map(|(agent, value)| Some((agent, serde_json::from_slice(&value).ok()?)))
            .collect())
    }
}

#[cfg(test)]
#[path = "presence_tests.rs"]
mod tests;
