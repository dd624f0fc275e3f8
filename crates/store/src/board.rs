//! The task board's rules, written once for every backend: which record keys are tasks, how a
//! record is read and checked, how a board is put together from its records (an unreadable one
//! reported, never hiding the rest), a task's blockers, an update's outcome, a new task and its
//! id. The backends keep only storage: where records live, how they are locked or compared and
//! set.

use crate::error::StoreError;
use crate::tasks::{CorruptTask, NewTask, TaskList};
use troupe_protocol::{check_dependencies, BlockerStatus, Task, TaskError, TaskId};

/// A task id as a record's key spells it; only canonical decimal (`03` would alias `3`), so
/// other keys (a lock, the allocator, temp files) are not tasks.
pub fn task_id(key: &str) -> Option<TaskId> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    key.parse().ok()
}

/// The task a record stored under `id` holds; [`StoreError::Corrupt`] at `place` when it is
/// not one, or is another task.
pub fn decode_task(
    id: TaskId,
    bytes: &[u8],
    place: impl Fn() -> String,
) -> Result<Task, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        place: place(),
        detail,
    };
    let task: Task = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if task.id != id {
        return Err(corrupt(format!("it holds task {} instead", task.id)));
    }
    Ok(task)
}

/// The board from what reading each record gave, by id: the readable tasks, and each
/// unreadable record reported (one bad record must not hide the rest); any other failure is
/// the board's.
pub fn board_of(
    records: impl IntoIterator<Item = (TaskId, Result<Option<Task>, StoreError>)>,
) -> Result<TaskList, StoreError> {
    let mut records: Vec<_> = records.into_iter().collect();
    records.sort_by_key(|(id, _)| *id);
    let mut board = TaskList::default();
    for (id, record) in records {
        match record {
            Ok(Some(t)) => board.tasks.push(t),
            Ok(None) => {}
            Err(StoreError::Corrupt { place, detail }) => {
                tracing::warn!(place = %place, error = %detail, "skipping unreadable task");
                board.corrupt.push(CorruptTask {
                    id,
                    place,
                    error: detail,
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(board)
}

/// The statuses of `task`'s blockers from what reading each gave; a missing or unreadable
/// blocker is left out, so it counts as not completed.
pub fn blockers_of(
    task: &Task,
    read: impl IntoIterator<Item = (TaskId, Result<Option<Task>, StoreError>)>,
) -> BlockerStatus {
    read.into_iter()
        .filter_map(|(b, record)| match record {
            Ok(Some(t)) => Some((b, t.status)),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(task = task.id, blocker = b, error = %e, "cannot read blocker");
                None
            }
        })
        .collect()
}

/// The task as the update `f` leaves `before`, with `before`'s blockers' statuses; the
/// record's key is its id, so `f` cannot move it. A refusal is [`StoreError::Task`].
pub fn applied<F>(before: &Task, blockers: &BlockerStatus, f: &mut F) -> Result<Task, StoreError>
where
    F: FnMut(&mut Task, &BlockerStatus) -> Result<(), TaskError> + ?Sized,
{
    let mut task = before.clone();
    f(&mut task, blockers)?;
    task.id = before.id;
    Ok(task)
}

/// Checks the board's dependencies (unknown ids, cycles) as they would be with `task` changed.
pub fn check_with(mut board: TaskList, task: &Task) -> Result<(), StoreError> {
    board.tasks.retain(|t| t.id != task.id);
    board.tasks.push(task.clone());
    Ok(check_dependencies(&board.tasks)?)
}

/// A new pending task under `id`, its blockers checked against `board` (a new task has no
/// dependents yet, so only its own blockers can be wrong).
pub fn new_task(board: TaskList, id: TaskId, new: &NewTask, now: u64) -> Result<Task, StoreError> {
    let task = Task::new(
        id,
        new.subject.clone(),
        new.description.clone(),
        new.blocked_by.clone(),
        new.created_by.clone(),
        now,
    )?;
    check_with(board, &task)?;
    Ok(task)
}

/// The id to allocate next: the one the allocator recorded (1 when it has none or cannot be
/// read), but never one in use on `board` (a lost or stale allocator).
pub fn next_id(recorded: Option<&str>, board: &TaskList) -> TaskId {
    let recorded = recorded
        .and_then(|r| r.trim().parse::<TaskId>().ok())
        .unwrap_or(1);
    let after_last = board
        .tasks
        .iter()
        .map(|t| t.id)
        .chain(board.corrupt.iter().map(|c| c.id))
        .max()
        .map_or(1, |last| last + 1);
    recorded.max(after_last).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: TaskId) -> Task {
        Task::new(id, format!("t{id}"), String::new(), vec![], "lead", 1)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn keys_are_canonical_decimal() {
        assert_eq!(task_id("3"), Some(3));
        assert_eq!(task_id("03"), None);
        assert_eq!(task_id("next"), None);
        assert_eq!(task_id(""), None);
    }

    #[test]
    fn a_record_holding_another_task_is_corrupt() {
        let bytes = serde_json::to_vec(&task(2)).unwrap_or_default();
        assert!(decode_task(2, &bytes, || "k".into()).is_ok());
        let err = decode_task(3, &bytes, || "k".into()).map(|_| ());
        assert!(matches!(err, Err(StoreError::Corrupt { place, .. }) if place == "k"));
    }

    #[test]
    fn the_board_is_by_id_and_reports_what_it_skips() {
        let corrupt = StoreError::Corrupt {
            place: "p".into(),
            detail: "bad".into(),
        };
        let board = board_of([
            (3, Ok(Some(task(3)))),
            (2, Err(corrupt)),
            (1, Ok(Some(task(1)))),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(board.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(board.corrupt[0].id, 2);
        assert_eq!(next_id(Some("2"), &board), 4);
        assert_eq!(next_id(Some("9\n"), &board), 9);
        assert_eq!(next_id(None, &TaskList::default()), 1);
    }
}
