//! Lead sessions on disk: `.troupe/sessions/<session-id>.jsonl`, found again by id or as the latest.

use std::path::{Path, PathBuf};

/// Errors finding a session to resume.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `--continue` with no earlier session in this workspace.
    #[error("no earlier session in {0}: start one without --continue")]
    NoSessions(PathBuf),
    /// `--resume <id>` with an id that has no transcript.
    #[error("no session '{id}' in {dir} (sessions are listed in that folder)")]
    NotFound {
        /// The id asked for.
        id: String,
        /// The sessions folder.
        dir: PathBuf,
    },
    /// The sessions folder could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// The sessions folder of a workspace.
pub fn sessions_dir(troupe_dir: &Path) -> PathBuf {
    troupe_dir.join("sessions")
}

/// A new session id: a UUID as Claude Code's are (version 7, so ids still sort by time).
/// Sessions named by the ULIDs of earlier versions still resume: ids are only looked up.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The transcript path of a session.
pub fn session_path(troupe_dir: &Path, id: &str) -> PathBuf {
    sessions_dir(troupe_dir).join(format!("{id}.jsonl"))
}

/// The id of an existing session, checked.
pub fn find_session(troupe_dir: &Path, id: &str) -> Result<String, SessionError> {
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid && session_path(troupe_dir, id).is_file() {
        Ok(id.to_string())
    } else {
        Err(SessionError::NotFound {
            id: id.to_string(),
            dir: sessions_dir(troupe_dir),
        })
    }
}

/// The most recently modified session.
pub fn latest_session(troupe_dir: &Path) -> Result<String, SessionError> {
    let dir = sessions_dir(troupe_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SessionError::NoSessions(dir))
        }
        Err(source) => return Err(SessionError::Io { path: dir, source }),
    };
    let mut best: Option<(std::time::SystemTime, String)> = None;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if best
            .as_ref()
            .is_none_or(|(t, id)| (modified, stem) > (*t, id.as_str()))
        {
            best = Some((modified, stem.to_string()));
        }
    }
    best.map(|(_, id)| id).ok_or(SessionError::NoSessions(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            latest_session(dir.path()),
            Err(SessionError::NoSessions(_))
        ));
        std::fs::create_dir_all(sessions_dir(dir.path())).unwrap();
        let a = new_session_id();
        std::fs::write(session_path(dir.path(), &a), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = new_session_id();
        std::fs::write(session_path(dir.path(), &b), "").unwrap();
        assert_eq!(latest_session(dir.path()).unwrap(), b);
        assert_eq!(find_session(dir.path(), &a).unwrap(), a);
        assert!(find_session(dir.path(), "../etc").is_err());
        assert!(find_session(dir.path(), "nope").is_err());
    }
}
