//! The task board `tasks/<id>.json`: one atomically written file per task. A change to one
//! task happens under that task's exclusive lock (`tasks/.<id>.lock`), so a claim is atomic
//! across threads and processes while claims of different tasks proceed side by side. What
//! needs the whole board — allocating ids (`tasks/.next`) with the dependency check of a new
//! task, and any change of a task's blockers (unknown ids, cycles) — also holds the board's
//! lock (`tasks/.lock`), always taken before a task's, so the two never deadlock. Reads take no
//! lock (whole-file writes are never seen half-done). Each change is recorded in the event log.

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

use troupe_protocol::{BlockerStatus, Event, Task, TaskId};

use super::sync::{SyncEvents, SyncTasks};
use super::{now_ms, FileStore};
use crate::board;
use crate::error::StoreError;
use crate::tasks::{NewTask, TaskFilter, TaskList};

/// The closure an update applies, as the file backend's own operations take it.
type TaskUpdate<'a> = &'a mut dyn FnMut(
    &mut Task,
    &troupe_protocol::BlockerStatus,
) -> Result<(), troupe_protocol::TaskError>;
use troupe_durable::lock::LockFile;

/// A task id as the board's file names hold it (`<id>.json`); other names are not tasks.
fn id_of(name: &str) -> Option<TaskId> {
    board::task_id(name.strip_suffix(".json")?)
}

impl FileStore {
    fn tasks_dir(&self) -> PathBuf {
        self.dir().join("tasks")
    }

    fn task_path(&self, id: TaskId) -> PathBuf {
        self.tasks_dir().join(format!("{id}.json"))
    }

    fn lock_tasks(&self) -> Result<LockFile, StoreError> {
        let dir = self.tasks_dir();
        fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
        Ok(LockFile::acquire(&dir.join(".lock"))?)
    }

    /// The exclusive lock on one task's record.
    fn lock_task(&self, id: TaskId) -> Result<LockFile, StoreError> {
        Ok(LockFile::acquire(
            &self.tasks_dir().join(format!(".{id}.lock")),
        )?)
    }

    /// The task as it is and as `f` would leave it; its lock is held by the caller.
    fn apply(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<(Task, Task), StoreError> {
        let before = self.get_task(id)?;
        let blockers = self.blocker_status(&before);
        let task = board::applied(&before, &blockers, f)?;
        Ok((before, task))
    }

    /// Checks the board's dependencies as they would be with `task` changed; the caller holds
    /// the board's lock, so no other blockers change meanwhile.
    fn check_board_with(&self, task: &Task) -> Result<(), StoreError> {
        board::check_with(self.whole_board()?, task)
    }

    /// Saves a changed task and records what changed; the caller holds its lock.
    fn commit(&self, before: &Task, task: &Task) -> Result<(), StoreError> {
        self.save_task(task)?;
        for event in crate::record::task_changes(before, task) {
            self.record_task_event(event);
        }
        Ok(())
    }

    /// The task's record: `None` when absent, [`StoreError::Corrupt`] when unreadable.
    fn load_task(&self, id: TaskId) -> Result<Option<Task>, StoreError> {
        let path = self.task_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("read", path)(e)),
        };
        board::decode_task(id, &bytes, || path.display().to_string()).map(Some)
    }

    fn save_task(&self, task: &Task) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(task).map_err(|source| StoreError::Serialize {
            what: "task",
            source,
        })?;
        self.replace_file(&self.task_path(task.id), &bytes)
    }

    /// Every id with a record on the board, ascending (readable or not).
    fn task_ids(&self) -> Result<Vec<TaskId>, StoreError> {
        let dir = self.tasks_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io("list", dir)(e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("list", &dir))?;
            if let Some(id) = entry.file_name().to_str().and_then(id_of) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// Every readable task and every unreadable record.
    fn whole_board(&self) -> Result<TaskList, StoreError> {
        let ids = self.task_ids()?;
        board::board_of(ids.into_iter().map(|id| (id, self.load_task(id))))
    }

    /// The next free id; the caller holds the tasks lock. `.next` keeps ids from being reused
    /// should a record be removed; the directory listing covers a lost or stale `.next`.
    fn allocate_task_id(&self, board: &TaskList) -> Result<TaskId, StoreError> {
        let next_path = self.tasks_dir().join(".next");
        let recorded = match fs::read_to_string(&next_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io("read", next_path)(e)),
        };
        let id = board::next_id(recorded.as_deref(), board);
        let next = id.saturating_add(1).to_string();
        self.replace_file(&next_path, next.as_bytes())?;
        Ok(id)
    }

    /// The statuses of the task's blockers; unreadable or missing ones are left out, so they
    /// count as not completed.
    fn blocker_status(&self, task: &Task) -> BlockerStatus {
        board::blockers_of(
            task,
            task.blocked_by.iter().map(|&b| (b, self.load_task(b))),
        )
    }

    /// Records an event; the task file is the source of truth, so a failure here is logged
    /// rather than undoing a committed change.
    fn record_task_event(&self, event: Event) {
        if let Err(e) = self.record(&event) {
            tracing::warn!(error = %e, "could not record task event");
        }
    }
}

impl SyncTasks for FileStore {
    fn create_task(&self, new: &NewTask) -> Result<Task, StoreError> {
        let _lock = self.lock_tasks()?;
        let board = self.whole_board()?;
        let id = self.allocate_task_id(&board)?;
        let task = board::new_task(board, id, new, now_ms())?;
        self.save_task(&task)?;
        let event = crate::record::task_created(&task);
        self.record_task_event(event);
        Ok(task)
    }

    fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.load_task(id)?.ok_or_else(|| StoreError::UnknownTask {
            id,
            place: self.task_path(id).display().to_string(),
        })
    }

    fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskList, StoreError> {
        let mut board = self.whole_board()?;
        board.tasks.retain(|t| filter.matches(t));
        Ok(board)
    }

    fn update_task(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<Task, StoreError> {
        // Unknown or unreadable: refused before any lock file is made for it.
        self.get_task(id)?;
        {
            let _task = self.lock_task(id)?;
            let (before, task) = self.apply(id, &mut *f)?;
            if task == before {
                return Ok(task);
            }
            if task.blocked_by == before.blocked_by {
                self.commit(&before, &task)?;
                return Ok(task);
            }
        }
        // The blockers change: nothing was saved; again from the start, under the board's
        // lock (taken first), then the task's.
        let _board = self.lock_tasks()?;
        let _task = self.lock_task(id)?;
        let (before, task) = self.apply(id, f)?;
        if task != before {
            if task.blocked_by != before.blocked_by {
                self.check_board_with(&task)?;
            }
            self.commit(&before, &task)?;
        }
        Ok(task)
    }
}
