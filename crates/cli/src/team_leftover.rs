//! A plain `-p` run that made no teammates, tasks, requests or mail leaves no team folder
//! behind: the team it made (the workspace's, or its session's own) is removed once the run is
//! over.

use std::path::PathBuf;
use troupe_store::{RequestFilter, TaskFilter};
use troupe_team::{Team, LEAD};

/// The folder to remove once the lead has let go of its team, when the team was not named with
/// `--team` (the workspace's or the session's own), lives in the file store, and holds nothing.
pub async fn unused_folder(team: &Team, named: bool) -> Option<PathBuf> {
    let shared = team.shared();
    let (troupe_dir, name) = (&shared.config.troupe_dir, team.name());
    let own =
        name.starts_with(crate::team_pick::SESSION_PREFIX) || name == crate::team_pick::DEFAULT;
    if named || !own || !troupe_store::file::has_roster(troupe_dir, name) {
        return None;
    }
    let store = &shared.store;
    let empty = team.roster().await.is_ok_and(|r| r.members.is_empty())
        && store
            .list_tasks(&TaskFilter::default())
            .await
            .is_ok_and(|l| l.tasks.is_empty() && l.corrupt.is_empty())
        && store
            .list_requests(&RequestFilter::default())
            .await
            .is_ok_and(|r| r.is_empty())
        && store.peek(LEAD).await.is_ok_and(|b| b.is_empty());
    empty.then(|| troupe_store::file::team_dir(troupe_dir, name))
}

/// Removes `folder` (a failure is only logged: the run's result is what matters).
pub fn remove(folder: Option<PathBuf>) {
    if let Some(folder) = folder {
        if let Err(e) = std::fs::remove_dir_all(&folder) {
            tracing::debug!(folder = %folder.display(), error = %e, "could not remove an unused team folder");
        }
    }
}
