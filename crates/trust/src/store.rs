//! The user's answers: `$XDG_CONFIG_HOME/troupe/trust.json` (`~/.config/troupe/trust.json`),
//! one entry per workspace with the hash of what it defined when the person answered. Written
//! whole to a temporary file and renamed over the old one; a file that does not parse is never
//! read as trust.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's current format.
const VERSION: u32 = 1;

/// The trust file of this user; `None` without `XDG_CONFIG_HOME` or `HOME`.
fn trust_file() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".config")))
        .map(|config| config.join("troupe/trust.json"))
}

/// What the file says about one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// Never answered.
    Unknown,
    /// Answered, when the definitions hashed to `hash`.
    Answer {
        /// Yes or no.
        trusted: bool,
        /// The definitions' hash then.
        hash: String,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    workspaces: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    trusted: bool,
    hash: String,
    answered_ms: u64,
}

/// The trust file.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// This user's trust file; `None` when there is no place for it.
    pub fn open() -> Option<TrustStore> {
        trust_file().map(|path| TrustStore { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The answer recorded for `workspace`; an error (to show as a warning) when the file
    /// cannot be read or does not parse.
    pub fn lookup(&self, workspace: &Path) -> Result<Stored> {
        let file = self.read()?;
        Ok(match file.workspaces.get(&key(workspace)) {
            Some(entry) => Stored::Answer {
                trusted: entry.trusted,
                hash: entry.hash.clone(),
            },
            None => Stored::Unknown,
        })
    }

    /// Records an answer for `workspace` (replacing any earlier one).
    pub fn record(&self, workspace: &Path, trusted: bool, hash: &str) -> Result<()> {
        let mut file = self.read()?;
        file.version = VERSION;
        file.workspaces.insert(
            key(workspace),
            Entry {
                trusted,
                hash: hash.to_string(),
                answered_ms: troupe_agent::transcript::now_ms(),
            },
        );
        self.write(&file)
    }

    /// Forgets `workspace`: the next start asks again. True when there was an answer.
    pub fn forget(&self, workspace: &Path) -> Result<bool> {
        let mut file = self.read()?;
        let had = file.workspaces.remove(&key(workspace)).is_some();
        if had {
            self.write(&file)?;
        }
        Ok(had)
    }

    fn read(&self) -> Result<File> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(File::default()),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("the trust file {} cannot be read", self.path.display())
                })
            }
        };
        let file: File = serde_json::from_str(&text).with_context(|| {
            format!(
                "the trust file {} is malformed (fix it or remove it)",
                self.path.display()
            )
        })?;
        if file.version != VERSION {
            anyhow::bail!(
                "the trust file {} has version {}, which this troupe does not know (it writes version {VERSION})",
                self.path.display(),
                file.version
            );
        }
        Ok(file)
    }

    fn write(&self, file: &File) -> Result<()> {
        let dir = self
            .path
            .parent()
            .context("the trust file has no parent directory")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let text = serde_json::to_string_pretty(file)?;
        let temp = dir.join(format!(".trust.json.{}.tmp", std::process::id()));
        let written = std::fs::File::create(&temp).and_then(|mut f| {
            use std::io::Write;
            f.write_all(text.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, &self.path)) {
            let _ = std::fs::remove_file(&temp);
            return Err(e).with_context(|| format!("writing {}", self.path.display()));
        }
        Ok(())
    }
}

/// A workspace's key: its path as given (callers pass the canonical root).
fn key(workspace: &Path) -> String {
    workspace.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_a_torn_file_is_an_error_not_trust() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore {
            path: dir.path().join("troupe/trust.json"),
        };
        let ws = Path::new("/w");
        assert_eq!(store.lookup(ws).unwrap(), Stored::Unknown);
        store.record(ws, true, "abc").unwrap();
        assert_eq!(
            store.lookup(ws).unwrap(),
            Stored::Answer {
                trusted: true,
                hash: "abc".into()
            }
        );
        assert!(store.forget(ws).unwrap());
        assert_eq!(store.lookup(ws).unwrap(), Stored::Unknown);
        std::fs::write(
            store.path(),
            r#"{"version": 1, "workspaces": {"/w": {"trus"#,
        )
        .unwrap();
        let err = store.lookup(ws).unwrap_err();
        assert!(format!("{err:#}").contains("malformed"), "{err:#}");
        assert!(store.record(ws, true, "abc").is_err(), "never overwritten");
    }
}
