//! The task board as a store sees it, in backend-neutral terms: create with an id allocated
//! atomically across processes, read, list, and a closure-based compare-and-set update under
//! an exclusive lock. The FSM in `troupe_protocol::task` decides every change.

use troupe_protocol::{BlockerStatus, Task, TaskError, TaskId, TaskStatus};

use async_trait::async_trait;

use crate::error::StoreError;

/// What `create_task` needs; the store allocates the id and the timestamps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewTask {
    /// One line saying what is to be done.
    pub subject: String,
    /// Details, possibly empty.
    pub description: String,
    /// Tasks that must be completed first; each must exist.
    pub blocked_by: Vec<TaskId>,
    /// Who puts it on the board.
    pub created_by: String,
}

/// Which tasks `list_tasks` returns; `None` fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only tasks in this status.
    pub status: Option<TaskStatus>,
    /// Only tasks owned by this agent (or `user:<name>`).
    pub owner: Option<String>,
}

impl TaskFilter {
    /// True when the task passes every set field.
    pub fn matches(&self, t: &Task) -> bool {
        self.status.is_none_or(|s| t.status == s)
            && self
                .owner
                .as_deref()
                .is_none_or(|o| t.owner.as_deref() == Some(o))
    }
}

/// A task record that could not be read; `list_tasks` skips it and reports it here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptTask {
    /// The task's id, as its record's name says.
    pub id: TaskId,
    /// Where the record is, in the backend's terms (a file, a bucket's key), for people.
    pub place: String,
    /// Why it could not be read.
    pub error: String,
}

/// What one listing of the board returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskList {
    /// The matching tasks, by id.
    pub tasks: Vec<Task>,
    /// Records that were skipped because they could not be read (whatever the filter).
    pub corrupt: Vec<CorruptTask>,
}

/// The closure an update applies: the task, and the statuses of its blockers as read under
/// the same lock.
pub type TaskUpdate<'a> =
    &'a mut (dyn FnMut(&mut Task, &BlockerStatus) -> Result<(), TaskError> + Send);

/// The team's task board.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Puts a new pending task on the board under the next free id (atomic across processes).
    /// Unknown blockers are refused with [`StoreError::Task`].
    async fn create_task(&self, new: &NewTask) -> Result<Task, StoreError>;

    /// The task with this id; [`StoreError::UnknownTask`] when there is none, and
    /// [`StoreError::Corrupt`] naming the file when its record cannot be read.
    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError>;

    /// The tasks matching the filter, by id; unreadable records are skipped and reported.
    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskList, StoreError>;

    /// The compare-and-set primitive: applies `f` to the task under an exclusive lock and
    /// persists the outcome. A refusal (`f` returns an error) saves nothing and is returned as
    /// [`StoreError::Task`]. Changed blockers are checked against the whole board (unknown
    /// ids, cycles) before anything is saved. Each new transition is recorded as an event.
    async fn update_task(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<Task, StoreError>;

    /// Claims a ready, unowned, pending task for `by`; exactly one of several racing claimers
    /// wins, the others get an error naming the owner (or the blockers).
    async fn claim_task(&self, id: TaskId, by: &str, now: u64) -> Result<Task, StoreError> {
        // A claim the committed record already refuses (owned, not pending) is refused without
        // queuing for the lock, so the losers of a race do not wait behind the winner's fsync.
        // Blockers are left to the locked check: every one counts as completed here.
        let seen = self.get_task(id).await?;
        let done: BlockerStatus = seen
            .blocked_by
            .iter()
            .map(|&b| (b, TaskStatus::Completed))
            .collect();
        seen.clone().claim(by, &done, now)?;
        self.update_task(id, &mut |t, blockers| t.claim(by, blockers, now))
            .await
    }

    /// Gives every in-progress task `owner` holds back to the board (pending, owner cleared,
    /// `why` in the history), as `by`; returns the released tasks. A task that changed hands
    /// meanwhile is left alone.
    async fn release_tasks_of(
        &self,
        owner: &str,
        by: &str,
        why: &str,
        now: u64,
    ) -> Result<Vec<Task>, StoreError> {
        release_owned_where(self, owner, by, why, now, || async { true }).await
    }
}

/// [`TaskStore::release_tasks_of`], releasing a task only when `still()` agrees (an owner's
/// liveness). `still` is asked after the task is read, and the release is written only if the
/// task is unchanged since that read: so "not alive" holds for the very record released, as
/// if asked under the board's lock (an owner claims only while alive, and a claim changes the
/// record). A task that changed meanwhile is read and asked about again.
pub async fn release_owned_where<S, F, Fut>(
    store: &S,
    owner: &str,
    by: &str,
    why: &str,
    now: u64,
    still: F,
) -> Result<Vec<Task>, StoreError>
where
    S: TaskStore + ?Sized,
    F: Fn() -> Fut + Send + Sync,
    Fut: std::future::Future<Output = bool> + Send,
{
    let filter = TaskFilter {
        status: Some(TaskStatus::InProgress),
        owner: Some(owner.to_string()),
    };
    let held = |t: &Task| t.status == TaskStatus::InProgress && t.owner.as_deref() == Some(owner);
    let mut released = Vec::new();
    for listed in store.list_tasks(&filter).await?.tasks {
        let mut seen = listed;
        for _ in 0..RELEASE_TRIES {
            if !held(&seen) || !still().await {
                break;
            }
            let mut outcome = Outcome::Unchanged;
            let t = store
                .update_task(seen.id, &mut |t, _| {
                    outcome = if *t != seen {
                        Outcome::Changed
                    } else {
                        Outcome::Released
                    };
                    match outcome {
                        Outcome::Released => t.release(by, why, now),
                        _ => Ok(()),
                    }
                })
                .await?;
            match outcome {
                Outcome::Released => {
                    released.push(t);
                    break;
                }
                Outcome::Changed => seen = t,
                Outcome::Unchanged => break,
            }
        }
    }
    Ok(released)
}

/// How often [`release_owned_where`] reads a task again that changed while `still` was asked.
const RELEASE_TRIES: usize = 8;

/// What one release attempt of [`release_owned_where`] found under the lock.
#[derive(Clone, Copy)]
enum Outcome {
    Unchanged,
    Changed,
    Released,
}
