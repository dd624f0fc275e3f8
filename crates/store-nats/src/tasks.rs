//! The task board: one key per task (its decimal id) and `next`, the id allocator. A change to
//! a task is a compare-and-set on the revision it was computed from, so of several claimers on
//! several machines exactly one wins. A change of a task's blockers must also see the whole
//! board unchanged (no cycle may form between two concurrent edits), so it holds the board
//! lock: a key in the lease bucket, which lapses after the lease TTL should its holder vanish.
//! The lock is fenced: its revision is the holder's epoch, confirmed by compare-and-set right
//! before the locked write, so a holder that stalled past the lapse starts over instead of
//! overlapping the next one.

use std::time::{Duration, Instant};

use troupe_protocol::{BlockerStatus, Task, TaskId};
use troupe_store::{
    board, LeaseHolder, NewTask, StoreError, TaskFilter, TaskList, TaskStore, TaskUpdate,
};

use crate::cas::Apply;
use crate::conn::Link;
use crate::kv::{Bucket, Cas, Record};
use crate::roster::MAX_CAS_ROUNDS;
use crate::{now_ms, to_bytes, NatsStore};

const NEXT: &str = "next";
const BOARD_LOCK: &str = "board-lock";

/// A task id as a key; other keys (`next`) are not tasks.
fn id_of(key: &str) -> Option<TaskId> {
    board::task_id(key)
}

/// The task stored under `id` in `tasks`.
fn parse_task(tasks: &Bucket, id: TaskId, record: &Record) -> Result<Task, StoreError> {
    board::decode_task(id, &record.value, || tasks.place(&id.to_string()))
}

/// The task and its revision; `None` when absent ([`NatsStore::load_task`] as a future).
async fn load_task(
    tasks: &Bucket,
    link: &Link,
    id: TaskId,
) -> Result<Option<(Task, u64)>, StoreError> {
    match tasks.get(link, &id.to_string()).await? {
        None => Ok(None),
        Some(record) => Ok(Some((parse_task(tasks, id, &record)?, record.revision))),
    }
}

/// The statuses of the task's blockers ([`NatsStore::blocker_status`] as a future).
async fn blocker_status(tasks: &Bucket, link: &Link, task: &Task) -> BlockerStatus {
    let mut read = Vec::with_capacity(task.blocked_by.len());
    for &b in &task.blocked_by {
        read.push((
            b,
            load_task(tasks, link, b).await.map(|r| r.map(|(t, _)| t)),
        ));
    }
    board::blockers_of(task, read)
}

/// A task update's closure: the task and its blockers' statuses in, the task as the closure
/// left it out (a refusal ends the operation).
type TaskApply<'a> = Apply<'a, (Task, BlockerStatus), Task>;

/// What the update of a task without the board lock came to.
enum Unlocked {
    /// The update changed nothing: the task as it is.
    Unchanged(Box<Task>),
    /// Written: the task before and after.
    Committed(Box<(Task, Task)>),
    /// The update changes the task's blockers (or lost every round): the locked path decides.
    NeedsLock,
}

/// The caller's update of task `id` without the board lock, applied until its
/// compare-and-set wins.
async fn update_unlocked(
    tasks: &Bucket,
    link: &Link,
    id: TaskId,
    f: TaskApply<'_>,
) -> Result<Unlocked, StoreError> {
    let mut backoff = crate::backoff::Backoff::conflicts();
    for round in 0..MAX_CAS_ROUNDS {
        if round > 0 {
            // Another writer won: let the crowd thin out before reading again.
            tokio::time::sleep(backoff.next_pause()).await;
        }
        let Some((before, revision)) = load_task(tasks, link, id).await? else {
            return Err(StoreError::UnknownTask {
                id,
                place: tasks.place(&id.to_string()),
            });
        };
        let blockers = blocker_status(tasks, link, &before).await;
        let mut task = f((before.clone(), blockers))?;
        // The record's key is its id; a closure must not move it.
        task.id = before.id;
        if task == before {
            return Ok(Unlocked::Unchanged(Box::new(task)));
        }
        if task.blocked_by != before.blocked_by {
            break;
        }
        let bytes = to_bytes("task", &task)?;
        if let Cas::Done(_) = tasks.update(link, &id.to_string(), bytes, revision).await? {
            return Ok(Unlocked::Committed(Box::new((before, task))));
        }
    }
    Ok(Unlocked::NeedsLock)
}

/// The board lock while held; released on drop. Its key's revision is the holder's epoch: a
/// write made under the lock first confirms it ([`BoardLock::confirm`]), so a holder that
/// stalled past the lock's lapse cannot overlap the next holder.
struct BoardLock<'a> {
    store: &'a NatsStore,
    revision: u64,
    holder: bytes::Bytes,
}

/// A locked write found its lock lapsed and taken (the writer stalled past the lease TTL).
struct Fenced;

impl BoardLock<'_> {
    /// Confirms the lock is still this holder's, at the epoch it took, and refreshes it (a
    /// compare-and-set on its revision, which also restarts its lapse); `Fenced` when another
    /// holder's epoch began meanwhile.
    async fn confirm(&mut self) -> Result<Result<(), Fenced>, StoreError> {
        let inner = &self.store.inner;
        match inner
            .live
            .update(
                inner.conn.link(),
                BOARD_LOCK,
                self.holder.clone(),
                self.revision,
            )
            .await?
        {
            Cas::Done(revision) => {
                self.revision = revision;
                Ok(Ok(()))
            }
            Cas::Conflict => {
                tracing::warn!(
                    "the board lock lapsed while this writer held it (stalled past the lease TTL); starting over under a new lock"
                );
                self.revision = 0; // not ours: nothing to release
                Ok(Err(Fenced))
            }
        }
    }
}

impl BoardLock<'_> {
    /// Lets the lock go (deletes its key at this holder's revision).
    async fn release(&mut self) {
        let revision = std::mem::take(&mut self.revision);
        if revision == 0 {
            return;
        }
        let inner = &self.store.inner;
        if let Err(e) = inner
            .live
            .delete(inner.conn.link(), BOARD_LOCK, Some(revision))
            .await
        {
            tracing::warn!(error = %e, "could not release the board lock; it lapses after the lease TTL");
        }
    }
}

impl Drop for BoardLock<'_> {
    /// A holder dropped without [`BoardLock::release`] (its caller went away): the key is
    /// deleted in the background.
    fn drop(&mut self) {
        if self.revision == 0 {
            return;
        }
        let inner = &self.store.inner;
        let (bucket, link, revision) =
            (inner.live.clone(), inner.conn.link().clone(), self.revision);
        inner.conn.handle().spawn(async move {
            if let Err(e) = bucket.delete(&link, BOARD_LOCK, Some(revision)).await {
                tracing::warn!(error = %e, "could not release the board lock; it lapses after the lease TTL");
            }
        });
    }
}

impl NatsStore {
    /// One round of a locked update: the task's outcome, or `None` to start over under a new
    /// lock (this one was fenced, or every compare-and-set round was lost).
    async fn update_locked(
        &self,
        id: TaskId,
        f: TaskUpdate<'_>,
        lock: &mut BoardLock<'_>,
    ) -> Option<Result<Task, StoreError>> {
        for _ in 0..MAX_CAS_ROUNDS {
            // The board as the lock holds it still: blockers change only under the lock,
            // which the confirmation below proves was held from here to the write.
            let board = match self.whole_board().await {
                Ok(board) => board,
                Err(e) => return Some(Err(e)),
            };
            let (before, task, revision) = match self.apply(id, &mut *f).await {
                Ok(applied) => applied,
                Err(e) => return Some(Err(e)),
            };
            if task == before {
                return Some(Ok(task));
            }
            if task.blocked_by != before.blocked_by {
                if let Err(e) = board::check_with(board, &task) {
                    return Some(Err(e));
                }
            }
            match lock.confirm().await {
                Ok(Ok(())) => {}
                Ok(Err(Fenced)) => return None,
                Err(e) => return Some(Err(e)),
            }
            match self.commit(&before, &task, revision).await {
                Ok(true) => return Some(Ok(task)),
                Ok(false) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }

    fn task_place(&self, id: TaskId) -> String {
        self.inner.tasks.place(&id.to_string())
    }

    fn parse_task(&self, id: TaskId, record: &Record) -> Result<Task, StoreError> {
        parse_task(&self.inner.tasks, id, record)
    }

    /// The task and its revision; `None` when absent.
    async fn load_task(&self, id: TaskId) -> Result<Option<(Task, u64)>, StoreError> {
        let inner = &self.inner;
        match inner.tasks.get(inner.conn.link(), &id.to_string()).await? {
            None => Ok(None),
            Some(record) => Ok(Some((self.parse_task(id, &record)?, record.revision))),
        }
    }

    /// Every readable task and every unreadable record, by id.
    async fn whole_board(&self) -> Result<TaskList, StoreError> {
        let inner = &self.inner;
        let records = inner.tasks.snapshot(inner.conn.link()).await?;
        board::board_of(records.into_iter().filter_map(|r| {
            let id = id_of(&r.key)?;
            Some((id, self.parse_task(id, &r).map(Some)))
        }))
    }

    /// The statuses of the task's blockers; unreadable or missing ones count as not completed.
    async fn blocker_status(&self, task: &Task) -> BlockerStatus {
        blocker_status(&self.inner.tasks, self.inner.conn.link(), task).await
    }

    /// The next free id: `next` moved on by compare-and-set (never below an id in use).
    async fn allocate_task_id(&self, board: &TaskList) -> Result<TaskId, StoreError> {
        let (tasks, link) = (&self.inner.tasks, self.inner.conn.link());
        // A lost round (another creator moved `next`) pauses on the runtime's timer,
        // jittered, before it reads again.
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                tokio::time::sleep(backoff.next_pause()).await;
            }
            let current = tasks.get(link, NEXT).await?;
            let recorded = current
                .as_ref()
                .and_then(|r| std::str::from_utf8(&r.value).ok());
            let id = board::next_id(recorded, board);
            let next = bytes::Bytes::from(id.saturating_add(1).to_string());
            let written = match current {
                Some(r) => tasks.update(link, NEXT, next, r.revision).await?,
                None => tasks.create(link, NEXT, next).await?,
            };
            if let Cas::Done(_) = written {
                return Ok(id);
            }
        }
        Err(crate::roster::cas_exhausted(link, "the task id allocator"))
    }

    /// Takes the board lock, waiting while another writer holds it (it lapses after the lease
    /// TTL should that writer vanish).
    async fn lock_board(&self) -> Result<BoardLock<'_>, StoreError> {
        let inner = &self.inner;
        let holder = to_bytes("lock holder", &LeaseHolder::this_process())?;
        let deadline = Instant::now() + inner.lease_ttl * 2 + Duration::from_secs(5);
        let (live, link) = (&inner.live, inner.conn.link());
        // The wait pauses on the runtime's timer.
        let mut backoff = crate::backoff::Backoff::conflicts();
        let revision = loop {
            if let Cas::Done(revision) = live.create(link, BOARD_LOCK, holder.clone()).await? {
                break revision;
            }
            if Instant::now() >= deadline {
                return Err(link.error(
                    "lock the task board",
                    format!("it stayed locked by {}", live.place(BOARD_LOCK)),
                ));
            }
            // Blocker edits are rare and short: a brief backoff is cheaper than a watch.
            tokio::time::sleep(backoff.next_pause()).await;
        };
        Ok(BoardLock {
            store: self,
            revision,
            holder,
        })
    }

    /// One attempt at applying `f`: the task as it was, as `f` left it, and its revision.
    async fn apply(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<(Task, Task, u64), StoreError> {
        let Some((before, revision)) = self.load_task(id).await? else {
            return Err(StoreError::UnknownTask {
                id,
                place: self.task_place(id),
            });
        };
        let blockers = self.blocker_status(&before).await;
        let task = board::applied(&before, &blockers, f)?;
        Ok((before, task, revision))
    }

    /// Writes a changed task if it is still at `revision`, and records what changed.
    async fn commit(&self, before: &Task, task: &Task, revision: u64) -> Result<bool, StoreError> {
        let inner = &self.inner;
        let bytes = to_bytes("task", task)?;
        if inner
            .tasks
            .update(inner.conn.link(), &task.id.to_string(), bytes, revision)
            .await?
            == Cas::Conflict
        {
            return Ok(false);
        }
        for event in troupe_store::record::task_changes(before, task) {
            self.record_quietly(event).await;
        }
        Ok(true)
    }
}

#[async_trait::async_trait]
impl TaskStore for NatsStore {
    async fn create_task(&self, new: &NewTask) -> Result<Task, StoreError> {
        let inner = &self.inner;
        for _ in 0..MAX_CAS_ROUNDS {
            let board = self.whole_board().await?;
            let id = self.allocate_task_id(&board).await?;
            let task = board::new_task(board, id, new, now_ms())?;
            let bytes = to_bytes("task", &task)?;
            if let Cas::Done(_) = inner
                .tasks
                .create(inner.conn.link(), &id.to_string(), bytes)
                .await?
            {
                self.record_quietly(troupe_store::record::task_created(&task))
                    .await;
                return Ok(task);
            }
        }
        Err(self.cas_exhausted("the task board"))
    }

    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.load_task(id)
            .await?
            .map(|(t, _)| t)
            .ok_or_else(|| StoreError::UnknownTask {
                id,
                place: self.task_place(id),
            })
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskList, StoreError> {
        let mut board = self.whole_board().await?;
        board.tasks.retain(|t| filter.matches(t));
        Ok(board)
    }

    async fn claim_task(&self, id: TaskId, by: &str, now: u64) -> Result<Task, StoreError> {
        // No lock to queue for here (the file backend's reason to pre-check): the
        // compare-and-set itself decides, and a refused claim writes nothing.
        self.update_task(id, &mut |t, blockers| t.claim(by, blockers, now))
            .await
    }

    async fn update_task(&self, id: TaskId, f: TaskUpdate<'_>) -> Result<Task, StoreError> {
        // First without the lock.
        let inner = &self.inner;
        let (tasks, link) = (&inner.tasks, inner.conn.link());
        // A refusal (the task is claimed already, ...) ends the operation here, at once.
        let mut apply = |(mut task, blockers): (Task, BlockerStatus)| {
            f(&mut task, &blockers)?;
            Ok(task)
        };
        match update_unlocked(tasks, link, id, &mut apply).await? {
            Unlocked::Unchanged(task) => return Ok(*task),
            Unlocked::Committed(both) => {
                let (before, task) = *both;
                for event in troupe_store::record::task_changes(&before, &task) {
                    self.record_quietly(event).await;
                }
                return Ok(task);
            }
            Unlocked::NeedsLock => {}
        }
        // The blockers change: again from the start, with the whole board held still. A
        // holder that stalled past its lock's lapse is fenced out and starts over.
        for _ in 0..MAX_CAS_ROUNDS {
            let mut lock = self.lock_board().await?;
            let outcome = self.update_locked(id, &mut *f, &mut lock).await;
            lock.release().await;
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
        Err(self.cas_exhausted(&format!("task {id}")))
    }
}
