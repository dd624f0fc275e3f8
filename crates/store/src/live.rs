//! Leases: an agent is alive while its process holds an exclusive advisory lock (`flock`) on
//! `live/<agent>.lock` in the team's directory. The kernel drops the lock when the process
//! ends, however it ends, so a crashed agent never blocks its successor, and no pid is ever
//! probed (`kill(pid, 0)` is fooled by zombies and reused pids). The holder writes its pid and
//! start time into the file, so whoever is refused can be told who holds it.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use troupe_protocol::validate_agent_name;

use crate::error::StoreError;

/// Who holds a lease, as the holder wrote it into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// The holder's process id (for people to act on; never probed).
    pub pid: u32,
    /// When it took the lease, in milliseconds since the Unix epoch.
    pub started_ms: u64,
}

impl std::fmt::Display for LeaseHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = i128::from(self.started_ms) * 1_000_000;
        let when = time::OffsetDateTime::from_unix_timestamp_nanos(started)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| format!("{} ms after the epoch", self.started_ms));
        write!(f, "pid {}, started {when}", self.pid)
    }
}

/// A held lease; the agent counts as alive until it is dropped or its process ends.
#[derive(Debug)]
pub struct Lease {
    file: File,
    path: PathBuf,
    holder: LeaseHolder,
}

impl Lease {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What this process wrote into the lock file.
    pub fn holder(&self) -> &LeaseHolder {
        &self.holder
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Closing the file releases the lock too; an unlock error cannot be acted on here.
        let _ = self.file.unlock();
    }
}

/// The lock file of `agent`'s lease in a team directory.
pub fn lease_path(team_dir: &Path, agent: &str) -> PathBuf {
    team_dir.join("live").join(format!("{agent}.lock"))
}

/// Takes `agent`'s lease in the team directory `team_dir` (`.troupe/teams/<team>`), without
/// waiting: while another live process holds it, the answer is [`StoreError::LeaseHeld`]
/// naming that process.
pub fn acquire_lease(team_dir: &Path, agent: &str) -> Result<Lease, StoreError> {
    validate_agent_name(agent).map_err(|source| StoreError::BadName {
        what: "agent",
        source,
    })?;
    let dir = team_dir.join("live");
    fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
    let path = lease_path(team_dir, agent);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(StoreError::io("open lease file", &path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(StoreError::LeaseHeld {
                agent: agent.to_string(),
                team: team_name(team_dir),
                holder: read_holder(&path),
                path,
            })
        }
        Err(TryLockError::Error(e)) => return Err(StoreError::io("lock", &path)(e)),
    }
    let holder = LeaseHolder {
        pid: std::process::id(),
        started_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
    };
    let mut line = serde_json::to_vec(&holder).map_err(|source| StoreError::Serialize {
        what: "lease holder",
        source,
    })?;
    line.push(b'\n');
    // A previous holder's record may still be there (it died); ours replaces it. No fsync: the
    // record matters only while this process lives, and readers share the page cache.
    file.set_len(0).map_err(StoreError::io("truncate", &path))?;
    file.write_all_at(&line, 0)
        .map_err(StoreError::io("write", &path))?;
    Ok(Lease { file, path, holder })
}

/// The holder recorded in a lease file; `None` when it cannot be read (the holder is still
/// writing it, or it is damaged).
fn read_holder(path: &Path) -> Option<LeaseHolder> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The team's name: the last component of its directory.
fn team_name(team_dir: &Path) -> String {
    team_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let team = dir.path().join("teams").join("blue");
        let first = acquire_lease(&team, "lead").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.holder().pid, std::process::id());
        assert_eq!(first.path(), team.join("live/lead.lock"));
        // flock conflicts between open file descriptions, so a second acquisition in the same
        // process stands in for a second process here.
        match acquire_lease(&team, "lead") {
            Err(StoreError::LeaseHeld {
                agent,
                team: name,
                holder,
                ..
            }) => {
                assert_eq!((agent.as_str(), name.as_str()), ("lead", "blue"));
                assert_eq!(holder.as_ref(), Some(first.holder()));
            }
            other => panic!("expected the lease to be held: {other:?}"),
        }
        // Another agent's lease is independent.
        let other = acquire_lease(&team, "alice").unwrap_or_else(|e| panic!("{e}"));
        drop(first);
        let again = acquire_lease(&team, "lead").unwrap_or_else(|e| panic!("{e}"));
        assert!(again.holder().started_ms > 0);
        drop((other, again));
    }

    #[test]
    fn the_refusal_names_pid_and_start_time() {
        let holder = LeaseHolder {
            pid: 4242,
            started_ms: 1_700_000_000_000,
        };
        let err = StoreError::LeaseHeld {
            agent: "lead".into(),
            team: "blue".into(),
            path: PathBuf::from("/w/.troupe/teams/blue/live/lead.lock"),
            holder: Some(holder),
        };
        let text = err.to_string();
        assert!(
            text.contains("pid 4242") && text.contains("2023-11-14T22:13:20Z"),
            "{text}"
        );
    }

    #[test]
    fn unsafe_agent_names_are_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            acquire_lease(dir.path(), "../x"),
            Err(StoreError::BadName { .. })
        ));
    }
}
