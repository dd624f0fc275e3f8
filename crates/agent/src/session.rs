//! Lead sessions on disk: `.troupe/sessions/<session-id>.jsonl`, found again by id or as the latest.

use crate::transcript::Line;
use serde::Serialize;
use std::path::{Path, PathBuf};
use troupe_durable::jsonl;
use troupe_protocol::{ChatMessage, ContentBlock, Role, Usage};

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

/// The session `--continue` resumes: the most recently modified one `troupe sessions` lists,
/// answered or not (a run whose first model call failed left its prompt: going on with it is
/// going on with the newest).
pub fn latest_session(troupe_dir: &Path) -> Result<String, SessionError> {
    let dir = sessions_dir(troupe_dir);
    for (id, path, modified_ms) in by_recency(&dir)? {
        // Usually the first one: only an empty transcript is passed over.
        let Ok(chunk) = jsonl::read_from(&path, 0) else {
            continue;
        };
        let (lines, _corrupt) = jsonl::parse_chunk::<Line>(&chunk);
        if summarize(id.clone(), modified_ms, &lines).is_some() {
            return Ok(id);
        }
    }
    Err(SessionError::NoSessions(dir))
}

/// The transcripts of `dir`, most recently modified first: (id, path, modified ms).
fn by_recency(dir: &Path) -> Result<Vec<(String, PathBuf, u64)>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SessionError::NoSessions(dir.to_path_buf()))
        }
        Err(source) => {
            return Err(SessionError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut found = Vec::new();
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
        let ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        found.push((stem.to_string(), path, ms));
    }
    // Newest first; ids (time-ordered UUIDs) break ties.
    found.sort_by(|a, b| (b.2, &b.0).cmp(&(a.2, &a.0)));
    Ok(found)
}

/// One session as `troupe sessions` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The session id (`--resume` takes it).
    pub id: String,
    /// When it started (its first line), milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// When it was last written to.
    pub modified_ms: u64,
    /// The first prompt the person (or `-p`) gave, on one line.
    pub first_prompt: Option<String>,
    /// Model replies in it.
    pub turns: u64,
    /// Tokens used per model, in the order the models first answered.
    pub usage: Vec<(String, Usage)>,
    /// Whether a model ever answered (a run that failed at once did not).
    pub answered: bool,
    /// The session `/clear` started this one from.
    pub cleared_from: Option<String>,
}

/// Every session of the workspace with something in it, most recently used first.
pub fn list_sessions(troupe_dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
    let dir = sessions_dir(troupe_dir);
    let found = match by_recency(&dir) {
        Ok(found) => found,
        Err(SessionError::NoSessions(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut sessions = Vec::new();
    for (id, path, modified_ms) in found {
        let chunk = jsonl::read_from(&path, 0).map_err(|e| SessionError::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let (lines, _corrupt) = jsonl::parse_chunk::<Line>(&chunk);
        if let Some(summary) = summarize(id, modified_ms, &lines) {
            sessions.push(summary);
        }
    }
    Ok(sessions)
}

/// A session's summary from its lines; `None` for one with nothing in it.
fn summarize(id: String, modified_ms: u64, lines: &[Line]) -> Option<SessionSummary> {
    let mut s = SessionSummary {
        id,
        started_ms: 0,
        modified_ms,
        first_prompt: None,
        turns: 0,
        usage: Vec::new(),
        answered: false,
        cleared_from: None,
    };
    let mut replies_without_usage = 0;
    for line in lines {
        let ts = match line {
            Line::Meta {
                ts, cleared_from, ..
            } => {
                s.cleared_from.clone_from(cleared_from);
                *ts
            }
            Line::Boundary { ts, .. } => *ts,
            Line::Message {
                message,
                mail_ids,
                ts,
                usage,
                model,
            } => {
                match message.role {
                    Role::Assistant => {
                        s.answered = true;
                        match (usage, model) {
                            (Some(usage), model) => {
                                s.turns += 1;
                                add_usage(&mut s.usage, model.as_deref().unwrap_or(""), usage);
                            }
                            (None, _) => replies_without_usage += 1,
                        }
                    }
                    Role::User if s.first_prompt.is_none() && mail_ids.is_empty() => {
                        s.first_prompt = prompt_text(message);
                    }
                    Role::User => {}
                }
                *ts
            }
        };
        if s.started_ms == 0 {
            s.started_ms = ts;
        }
    }
    // Transcripts written before replies carried their usage.
    if s.turns == 0 {
        s.turns = replies_without_usage;
    }
    if s.started_ms == 0 {
        s.started_ms = modified_ms;
    }
    let empty = lines.is_empty() || (s.first_prompt.is_none() && !s.answered);
    (!empty || s.cleared_from.is_some()).then_some(s)
}

fn add_usage(by_model: &mut Vec<(String, Usage)>, model: &str, usage: &Usage) {
    match by_model.iter_mut().find(|(m, _)| m == model) {
        Some((_, total)) => total.add(usage),
        None => by_model.push((model.to_string(), *usage)),
    }
}

/// A user message's text as a prompt on one line; `None` for tool results and what troupe
/// itself wrote (mail, workspace changes, hooks' context start with a tag).
fn prompt_text(message: &ChatMessage) -> Option<String> {
    let has_text = message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { .. }));
    let text = message.text();
    let text = text.trim();
    if !has_text || text.is_empty() || text.starts_with('<') {
        return None;
    }
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Transcript;

    fn answered(dir: &Path, id: &str, prompt: &str) {
        let mut t = Transcript::open(&session_path(dir, id)).unwrap();
        t.append_message(&ChatMessage::user_text(prompt), &[])
            .unwrap();
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        t.append_reply(&ChatMessage::assistant_text("ok"), &usage, "m1")
            .unwrap();
    }

    #[test]
    fn latest_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            latest_session(dir.path()),
            Err(SessionError::NoSessions(_))
        ));
        std::fs::create_dir_all(sessions_dir(dir.path())).unwrap();
        let a = new_session_id();
        answered(dir.path(), &a, "first");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = new_session_id();
        answered(dir.path(), &b, "second");
        assert_eq!(latest_session(dir.path()).unwrap(), b);
        assert_eq!(find_session(dir.path(), &a).unwrap(), a);
        assert!(find_session(dir.path(), "../etc").is_err());
        assert!(find_session(dir.path(), "nope").is_err());
    }

    #[test]
    fn the_newest_session_is_the_latest_answered_or_not_and_an_empty_one_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let a = new_session_id();
        answered(dir.path(), &a, "worked");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let failed = new_session_id();
        let mut t = Transcript::open(&session_path(dir.path(), &failed)).unwrap();
        t.append_message(&ChatMessage::user_text("server was down"), &[])
            .unwrap();
        assert_eq!(latest_session(dir.path()).unwrap(), failed);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let empty = new_session_id();
        std::fs::write(session_path(dir.path(), &empty), "").unwrap();
        assert_eq!(latest_session(dir.path()).unwrap(), failed, "nothing in it");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let cleared = new_session_id();
        let mut t = Transcript::open(&session_path(dir.path(), &cleared)).unwrap();
        t.append(&Line::Meta {
            id: cleared.clone(),
            agent: "lead".into(),
            cwd: "/w".into(),
            ts: 1,
            cleared_from: Some(a.clone()),
        })
        .unwrap();
        assert_eq!(latest_session(dir.path()).unwrap(), cleared);
    }

    #[test]
    fn summaries_count_replies_and_usage_and_show_the_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let a = new_session_id();
        answered(dir.path(), &a, "  fix   the\nbuild ");
        let mut t = Transcript::open(&session_path(dir.path(), &a)).unwrap();
        t.append_message(
            &ChatMessage::user_text("<inbox>\nmail\n</inbox>"),
            &["m".into()],
        )
        .unwrap();
        let usage = Usage {
            input_tokens: 1,
            output_tokens: 1,
            ..Usage::default()
        };
        t.append_reply(&ChatMessage::assistant_text("again"), &usage, "m1")
            .unwrap();
        std::fs::write(session_path(dir.path(), "empty"), "").unwrap();
        let list = list_sessions(dir.path()).unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        let s = &list[0];
        assert_eq!(s.id, a);
        assert_eq!(s.first_prompt.as_deref(), Some("fix the build"));
        assert_eq!(s.turns, 2);
        assert!(s.answered);
        assert_eq!(s.usage.len(), 1);
        assert_eq!(s.usage[0].1.input_tokens, 11);
        assert!(s.started_ms > 0);
    }
}
