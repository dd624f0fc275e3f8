//! Change notifications for the file backend: the `notify` crate (inotify on Linux) watching
//! the team directory recursively. Each file-system event is mapped to the [`Areas`] its path
//! belongs to and OR-ed into one shared set, which the waiting side takes whole: a burst of a
//! thousand appends costs the reader one wake-up, and nobody polls.
//!
//! Reads never wake anyone: the watch reports opens too (`notify` asks inotify for them), and
//! they are dropped here; only writes, creations, removals, renames and a close after writing
//! count. (The store's lock files are opened for writing, so taking a lock counts as a change
//! to its area — only writers take them.)

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::FileStore;
use crate::error::StoreError;
use crate::{Areas, ChangeWatch, PendingAreas};

/// A recursive watch on one team directory.
pub struct FileChangeWatch {
    // Dropping the watcher ends the watch (and its thread).
    _watcher: RecommendedWatcher,
    pending: Arc<PendingAreas>,
}

#[async_trait]
impl ChangeWatch for FileChangeWatch {
    async fn changed(&mut self) -> Areas {
        self.pending.take().await
    }
}

/// The area a path under the team directory belongs to (see the layout in `file/mod.rs`).
fn area_of(team_dir: &Path, path: &Path) -> Areas {
    let Ok(rel) = path.strip_prefix(team_dir) else {
        return Areas::NONE;
    };
    let Some(Component::Normal(first)) = rel.components().next() else {
        // The team directory itself: moved, removed or its attributes changed.
        return Areas::ALL;
    };
    match first.to_str().unwrap_or_default() {
        "roster.jsonl" | "roster.json" | "roster.lock" => Areas::ROSTER,
        "events.jsonl" => Areas::EVENTS,
        "inbox" => Areas::MAIL,
        "requests" => Areas::REQUESTS,
        "tasks" => Areas::TASKS,
        // An older version's presence files.
        "presence" => Areas::PRESENCE,
        "transcripts" => Areas::TRANSCRIPTS,
        // The member table (each lease opens it for writing and closes it when let go), and an
        // older version's member files: leases and presence records.
        "members" | "live" => Areas::LIVENESS | Areas::PRESENCE,
        // The temporary file of a compaction becomes roster.jsonl by a rename, which is
        // reported on its own.
        name if name.starts_with(".roster.json") => Areas::NONE,
        // Something troupe does not know (a newer version's file, a person's notes).
        _ => Areas::NONE,
    }
}

/// The areas one file-system event touched.
fn areas_of(team_dir: &Path, event: &notify::Event) -> Areas {
    if event.need_rescan() {
        // The kernel's queue overflowed: changes were lost, so everything may have changed.
        return Areas::ALL;
    }
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) => return Areas::NONE,
        EventKind::Any
        | EventKind::Create(_)
        | EventKind::Modify(_)
        | EventKind::Remove(_)
        | EventKind::Other => {}
    }
    let mut areas = Areas::NONE;
    for path in &event.paths {
        areas |= area_of(team_dir, path);
    }
    areas
}

/// What to check when the file watch cannot be set up.
const INOTIFY_HINT: &str =
    "on Linux, raise fs.inotify.max_user_watches or max_user_instances if they are exhausted";

impl FileStore {
    /// Watches the team directory recursively (see the module docs).
    pub(super) fn watch_dir_changes(&self) -> Result<FileChangeWatch, StoreError> {
        let dir: PathBuf = self.dir().to_path_buf();
        let pending = Arc::new(PendingAreas::default());
        let on_event = {
            let pending = pending.clone();
            let dir = dir.clone();
            move |result: notify::Result<notify::Event>| match result {
                Ok(event) => pending.add(areas_of(&dir, &event)),
                Err(e) => {
                    tracing::warn!(error = %e, "team directory watch reported an error");
                    pending.add(Areas::ALL);
                }
            }
        };
        let watch_error = |e: notify::Error| StoreError::Watch {
            place: dir.display().to_string(),
            detail: format!("{e} ({INOTIFY_HINT})"),
        };
        let mut watcher = notify::recommended_watcher(on_event).map_err(watch_error)?;
        watcher
            .watch(&dir, RecursiveMode::Recursive)
            .map_err(watch_error)?;
        Ok(FileChangeWatch {
            _watcher: watcher,
            pending,
        })
    }
}

/// Waits until `troupe_dir` holds a store for `team` (a lead creates it), watching the nearest
/// directory that exists on the way to it, so that waiting costs nothing.
///
/// A directory made on the way while the watch was being set up (say `teams/`, just before
/// the watch on `.troupe/` took) sends no event to it: after each watch is in place the way
/// is looked at again, and the watch moves down when it has grown. A look every
/// [`RECHECK`] besides catches an event the kernel dropped (a full inotify queue).
pub async fn wait_for_team(troupe_dir: &Path, team: &str) -> Result<(), StoreError> {
    let team_dir = super::team_dir(troupe_dir, team);
    let nearest_of = || team_dir.ancestors().skip(1).find(|d| d.is_dir());
    loop {
        if super::exists(troupe_dir, team) {
            return Ok(());
        }
        let Some(nearest) = nearest_of() else {
            return Err(StoreError::Watch {
                place: team_dir.display().to_string(),
                detail: "none of its parent directories exists".to_string(),
            });
        };
        let pending = Arc::new(PendingAreas::default());
        let on_event = {
            let pending = pending.clone();
            move |_: notify::Result<notify::Event>| pending.add(Areas::ALL)
        };
        let watch_error = |e: notify::Error| StoreError::Watch {
            place: nearest.display().to_string(),
            detail: format!("{e} ({INOTIFY_HINT})"),
        };
        let mut watcher = notify::recommended_watcher(on_event).map_err(watch_error)?;
        watcher
            .watch(nearest, RecursiveMode::NonRecursive)
            .map_err(watch_error)?;
        // Created between the looks above and the watch: seen now rather than never.
        if super::exists(troupe_dir, team) || nearest_of() != Some(nearest) {
            continue;
        }
        tokio::select! {
            _ = pending.take() => {}
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// How often [`wait_for_team`] looks again without an event.
const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[test]
    fn changes_coalesce_into_one_take() {
        let pending = PendingAreas::default();
        for _ in 0..1_000 {
            pending.add(Areas::EVENTS);
        }
        pending.add(Areas::ROSTER);
        pending.add(Areas::NONE);
        assert_eq!(
            pending.take().now_or_never(),
            Some(Areas::EVENTS | Areas::ROSTER)
        );
        // Nothing left: the next take waits for the next change.
        assert_eq!(pending.take().now_or_never(), None);
        pending.add(Areas::TASKS);
        assert_eq!(pending.take().now_or_never(), Some(Areas::TASKS));
    }

    #[test]
    fn paths_map_to_their_areas() {
        let dir = Path::new("/w/.troupe/teams/t");
        let cases = [
            ("roster.json", Areas::ROSTER),
            ("roster.jsonl", Areas::ROSTER),
            (".roster.jsonl.tmp-1-2", Areas::NONE),
            ("roster.lock", Areas::ROSTER),
            ("events.jsonl", Areas::EVENTS),
            ("inbox/bob.jsonl", Areas::MAIL),
            ("requests/01J.json", Areas::REQUESTS),
            ("tasks/3.json", Areas::TASKS),
            ("presence/bob.doing", Areas::PRESENCE),
            ("transcripts/bob.jsonl", Areas::TRANSCRIPTS),
            ("members", Areas::LIVENESS | Areas::PRESENCE),
            ("live/bob.lock", Areas::LIVENESS | Areas::PRESENCE),
            (".roster.json.tmp-1-2", Areas::NONE),
            ("notes.txt", Areas::NONE),
        ];
        for (rel, want) in cases {
            assert_eq!(area_of(dir, &dir.join(rel)), want, "{rel}");
        }
        assert_eq!(area_of(dir, dir), Areas::ALL);
        assert_eq!(area_of(dir, Path::new("/elsewhere/x")), Areas::NONE);
    }
}
