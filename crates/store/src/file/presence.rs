//! Presence `presence/<agent>.doing`: what each member is doing right now, and
//! `presence/<agent>.usage`: its running token total — one small file per member and kind,
//! replaced atomically (rename) but never synced and never locked, so a tool call or a model
//! reply costs one page-cache write instead of a locked, fsync'd rewrite of the roster.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

use super::{atomic, check_agent, FileStore};
use crate::error::StoreError;
use crate::{Durability, PresenceStore};
use troupe_protocol::AgentUsage;

const SUFFIX: &str = ".doing";
const USAGE_SUFFIX: &str = ".usage";

impl FileStore {
    fn presence_dir(&self) -> PathBuf {
        self.inner.dir.join("presence")
    }
}

impl PresenceStore for FileStore {
    fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        check_agent(agent)?;
        let dir = self.presence_dir();
        let path = dir.join(format!("{agent}{SUFFIX}"));
        match doing {
            Some(text) => {
                fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
                // Volatile by design: the page cache is enough whatever the store's durability.
                atomic::write_atomic_with(&path, text.as_bytes(), Durability::OsBuffered)
            }
            None => match fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                Err(e) => Err(StoreError::io("remove", &path)(e)),
            },
        }
    }

    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let dir = self.presence_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(StoreError::io("list", &dir)(e)),
        };
        let mut doing = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(agent) = name.strip_suffix(SUFFIX) else {
                continue; // a temporary file of a write in progress
            };
            // A file removed between listing and reading just means "doing nothing".
            if let Ok(text) = fs::read_to_string(entry.path()) {
                doing.insert(agent.to_string(), text);
            }
        }
        Ok(doing)
    }

    fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        check_agent(agent)?;
        let dir = self.presence_dir();
        let path = dir.join(format!("{agent}{USAGE_SUFFIX}"));
        let text = serde_json::to_vec(usage).map_err(|e| {
            StoreError::io("encode", &path)(std::io::Error::new(ErrorKind::InvalidData, e))
        })?;
        fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
        atomic::write_atomic_with(&path, &text, Durability::OsBuffered)
    }

    fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        let dir = self.presence_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(StoreError::io("list", &dir)(e)),
        };
        let mut usages = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(agent) = name.strip_suffix(USAGE_SUFFIX) else {
                continue;
            };
            // Replaced by rename, so a read sees a whole file; one that does not parse (a
            // foreign file) is skipped.
            if let Ok(bytes) = fs::read(entry.path()) {
                if let Ok(usage) = serde_json::from_slice::<AgentUsage>(&bytes) {
                    usages.insert(agent.to_string(), usage);
                }
            }
        }
        Ok(usages)
    }
}
