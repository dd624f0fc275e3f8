//! The roster: one record (key `roster`), changed only by compare-and-set.

use std::path::PathBuf;

use troupe_protocol::Roster;
use troupe_store::{RosterStore, StoreError};

use crate::kv::{Cas, Record};
use crate::{to_bytes, NatsStore};

const KEY: &str = "roster";

/// How often a compare-and-set is retried before giving up (each retry means another writer
/// committed, so the team as a whole made progress).
pub(crate) const MAX_CAS_ROUNDS: usize = 10_000;

impl NatsStore {
    fn load_roster(&self) -> Result<(Roster, Option<u64>), StoreError> {
        let inner = &self.inner;
        match inner.roster.get(&inner.conn, KEY)? {
            None => Ok((Roster::new(&inner.team, ""), None)),
            Some(Record {
                value, revision, ..
            }) => {
                let roster = serde_json::from_slice(&value).map_err(|e| StoreError::Corrupt {
                    path: PathBuf::from(inner.roster.place(KEY)),
                    detail: e.to_string(),
                })?;
                Ok((roster, Some(revision)))
            }
        }
    }

    pub(crate) fn cas_exhausted(&self, what: &str) -> StoreError {
        self.inner.conn.error(
            format!("update {what}"),
            format!("{MAX_CAS_ROUNDS} compare-and-set rounds lost to other writers"),
        )
    }
}

impl RosterStore for NatsStore {
    fn roster(&self) -> Result<Roster, StoreError> {
        Ok(self.load_roster()?.0)
    }

    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError> {
        let inner = &self.inner;
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                backoff.wait(); // another writer won: let the crowd thin out
            }
            let (before, revision) = self.load_roster()?;
            let mut roster = before.clone();
            f(&mut roster);
            if roster == before {
                return Ok(roster);
            }
            let bytes = to_bytes("roster", &roster)?;
            let written = match revision {
                Some(rev) => inner.roster.update(&inner.conn, KEY, bytes, rev)?,
                None => inner.roster.create(&inner.conn, KEY, bytes)?,
            };
            if let Cas::Done(_) = written {
                return Ok(roster);
            }
        }
        Err(self.cas_exhausted("the roster"))
    }
}
