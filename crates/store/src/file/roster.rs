//! The roster `roster.json`: read freely (whole-file atomic writes), changed only under the
//! exclusive lock on `roster.lock`.
//!
//! A corrupt roster is an error naming the file, on read and on update alike: troupe never
//! overwrites it, because the file is the only record of who is on the team; a person (or
//! the lead) must repair or remove it.

use std::fs;
use std::io::ErrorKind;

use troupe_protocol::Roster;

use super::{atomic, FileStore};
use crate::error::StoreError;
use crate::file::lock::LockFile;
use crate::RosterStore;

impl FileStore {
    fn load_roster(&self) -> Result<Roster, StoreError> {
        let path = self.inner.dir.join("roster.json");
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                path,
                detail: e.to_string(),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Roster::new(&self.inner.team, "")),
            Err(e) => Err(StoreError::io("read", path)(e)),
        }
    }
}

impl RosterStore for FileStore {
    fn roster(&self) -> Result<Roster, StoreError> {
        self.load_roster()
    }

    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError> {
        let _lock = LockFile::acquire(&self.inner.dir.join("roster.lock"))?;
        let before = self.load_roster()?;
        let mut roster = before.clone();
        f(&mut roster);
        if roster != before {
            let bytes =
                serde_json::to_vec_pretty(&roster).map_err(|source| StoreError::Serialize {
                    what: "roster",
                    source,
                })?;
            atomic::write_atomic_with(
                &self.inner.dir.join("roster.json"),
                &bytes,
                self.durability(),
            )?;
        }
        Ok(roster)
    }
}
