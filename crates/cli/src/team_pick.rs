//! Which team a lead works with and which team a command from another terminal acts on.
//!
//! One board per project: a lead started without `--team` works on the workspace's team,
//! `default`, the one `troupe task …` from another terminal uses too. When another lead already
//! runs on it, the new session gets a team of its own, named after its session
//! (`session-<the session id's last group>`), and says so; `--team NAME` joins a named team,
//! where a second lead is refused. Commands acting on "the" team (`troupe team …`, `task`,
//! `worktree`) take `--team`, else the only running team (a live lead holds it), else `default`
//! — never a guess among older sessions' teams; several running teams are a question back,
//! listing them.

use anyhow::{bail, Result};
use std::path::Path;
use std::time::SystemTime;
use troupe_team::LEAD;

use crate::store::StoreChoice;

/// The team of commands run where no team exists yet.
pub const DEFAULT: &str = "default";

/// What the name of a session's own team starts with.
pub const SESSION_PREFIX: &str = "session-";

/// The team of a lead started without `--team`: named after its session (the last group of
/// its UUID, the random part, so two sessions started together differ).
pub fn of_session(session_id: &str) -> String {
    let tail: String = session_id
        .rsplit('-')
        .next()
        .unwrap_or(session_id)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .take(12)
        .collect();
    format!("{SESSION_PREFIX}{tail}")
}

/// One team found in the workspace's file store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its name.
    pub name: String,
    /// Whether a live lead holds it.
    pub running: bool,
    /// When its state last changed (its folder's newest direct entry).
    pub changed: SystemTime,
}

/// The teams under `troupe_dir/teams/`, newest first.
pub fn teams(troupe_dir: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(troupe_dir.join("teams")) else {
        return Vec::new();
    };
    let mut found: Vec<Found> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            // A NATS team's local transcripts are not a team of this store.
            if !troupe_store::file::has_roster(troupe_dir, &name) {
                return None;
            }
            let dir = troupe_store::file::team_dir(troupe_dir, &name);
            let running = troupe_store::live::probe_lease(&dir, LEAD)
                .map(|state| state.is_held())
                .unwrap_or(false);
            Some(Found {
                changed: last_change(&dir),
                name,
                running,
            })
        })
        .collect();
    found.sort_by(|a, b| b.changed.cmp(&a.changed).then(a.name.cmp(&b.name)));
    found
}

/// The newest modification time of `dir` and its direct entries (the roster log, events,
/// presence… are rewritten in place or appended, which a directory's own time misses).
fn last_change(dir: &Path) -> SystemTime {
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH)
    };
    let mut newest = mtime(dir);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            newest = newest.max(mtime(&entry.path()));
        }
    }
    newest
}

/// The team a command from another terminal acts on: `flag` as given; else (file store) the
/// only running team, or the most recently active one when none runs (saying so on stderr when
/// there are others), or [`DEFAULT`] when the workspace has no team. Several running teams are
/// an error that lists them and asks for `--team`.
pub fn pick(flag: Option<&str>, choice: &StoreChoice, troupe_dir: &Path) -> Result<String> {
    if let Some(name) = flag.filter(|f| !f.is_empty()) {
        return Ok(name.to_string());
    }
    if let StoreChoice::Nats(..) = choice {
        // A server's teams are not listed from here: the one of that name, as before.
        return Ok(DEFAULT.to_string());
    }
    let all = teams(troupe_dir);
    let running: Vec<&Found> = all.iter().filter(|t| t.running).collect();
    match running.as_slice() {
        [one] => return Ok(one.name.clone()),
        [] => {}
        several => bail!(
            "{} teams are running here: {}; name one with --team NAME",
            several.len(),
            several
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    Ok(DEFAULT.to_string())
}

/// The team of a lead started without `--team`: the workspace's [`DEFAULT`] team, unless a
/// live lead holds it (file store) — then one of its own, named after `session_id`, with a note
/// saying so. On a server the session keeps a team of its own, as other machines' leads
/// cannot be seen from here.
pub fn for_lead(choice: &StoreChoice, troupe_dir: &Path, session_id: &str) -> String {
    if let StoreChoice::Nats(..) = choice {
        return of_session(session_id);
    }
    let taken = teams(troupe_dir)
        .iter()
        .any(|t| t.name == DEFAULT && t.running);
    if !taken {
        return DEFAULT.to_string();
    }
    let own = of_session(session_id);
    crate::render::sanitize::errln!(
        "troupe: note: another lead is running on this workspace's team '{DEFAULT}'; this session works on a team (and board) of its own, '{own}' (--team NAME joins another)"
    );
    own
}

/// The message for a command that needs a running team when the workspace has none yet.
pub fn none_yet(choice: &StoreChoice, troupe_dir: &Path) -> String {
    format!(
        "no team in {} yet: a lead makes one (`troupe`, or `troupe -p \"…\"`)",
        choice.describe(troupe_dir)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_of_local_transcripts_is_not_a_team_of_the_file_store() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let troupe = dir.path();
        std::fs::create_dir_all(troupe.join("teams/web/transcripts"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(troupe.join("teams/local")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(troupe.join("teams/local/roster.jsonl"), "")
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = teams(troupe).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["local"]);
    }

    #[test]
    fn a_sessions_team_is_a_valid_name_from_the_random_end_of_its_id() {
        let name = of_session("01a218d4-bb29-7706-9ddb-72C41CE111D7");
        assert_eq!(name, "session-72c41ce111d7");
        assert!(troupe_protocol::validate_agent_name(&name).is_ok());
        let fresh = of_session(&troupe_agent::session::new_session_id());
        assert!(
            troupe_protocol::validate_agent_name(&fresh).is_ok(),
            "{fresh}"
        );
    }

    #[test]
    fn commands_and_leads_use_the_workspace_team_unless_one_runs() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let troupe_dir = dir.path().join(".troupe");
        let file = StoreChoice::File;
        assert_eq!(
            pick(None, &file, &troupe_dir).ok().as_deref(),
            Some(DEFAULT)
        );
        assert_eq!(
            pick(Some("web"), &file, &troupe_dir).ok().as_deref(),
            Some("web")
        );
        // An older session's team, not running: commands stay on the workspace's team.
        std::fs::create_dir_all(troupe_dir.join("teams/session-abc"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(troupe_dir.join("teams/session-abc/roster.jsonl"), "")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            pick(None, &file, &troupe_dir).ok().as_deref(),
            Some(DEFAULT)
        );
        // A lead without --team takes the workspace's team while nobody leads it.
        assert_eq!(for_lead(&file, &troupe_dir, "01a2-72c41ce111d7"), DEFAULT);
    }
}
