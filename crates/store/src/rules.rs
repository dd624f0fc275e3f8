//! The rules every backend shares, written once above them: which overdue requests a sweep
//! expires, and which in-progress tasks go back to the board when their owner is gone. A
//! backend provides only storage (read, list, compare-and-set updates); these decide what the
//! updates do.

use troupe_protocol::{Request, RequestStatus, Task, TaskStatus};

use crate::error::StoreError;
use crate::tasks::{TaskFilter, TaskStore};
use crate::{RequestFilter, RequestStore};

/// [`RequestStore::sweep_expired`]: moves every overdue pending request to expired, each
/// decided again on its current record (it may have been answered since it was listed), and
/// returns the ones it expired. A request that went away meanwhile is skipped.
pub async fn sweep_expired<S: RequestStore + ?Sized>(
    store: &S,
    now: u64,
) -> Result<Vec<Request>, StoreError> {
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    let mut expired = Vec::new();
    for listed in store.list_requests(&pending).await? {
        if !listed.is_overdue(now) {
            continue;
        }
        let mut expired_now = false;
        let updated = store
            .update_request(&listed.id, &mut |r| {
                expired_now = r.is_overdue(now);
                if expired_now {
                    r.expire(now)
                } else {
                    Ok(())
                }
            })
            .await;
        match updated {
            Ok(r) if expired_now => expired.push(r),
            Ok(_) | Err(StoreError::UnknownRequest { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(expired)
}

/// How often [`release_owned_where`] reads a task again that changed while `still` was asked.
const RELEASE_TRIES: usize = 8;

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

/// What one release attempt of [`release_owned_where`] found under the lock.
#[derive(Clone, Copy)]
enum Outcome {
    Unchanged,
    Changed,
    Released,
}
