//! The one liveness rule applied to the team: an agent is alive while a live process holds its
//! lease (the store's `LivenessStore`), and a task in progress belongs to a live owner. When an
//! owner ends, or is found not alive, its in-progress tasks go back to the board (pending,
//! owner cleared, a history note saying why — each release is an event of the board), the
//! lead is told by mail which ones, and the live teammates are woken to see the change.

use crate::protocols::Courier;
use crate::spec::LEAD;
use std::collections::BTreeSet;
use troupe_agent::transcript::now_ms;
use troupe_protocol::request::SYSTEM_ACTOR;
use troupe_protocol::{AgentStatus, Envelope, MailKind, Task, TaskStatus, USER_OWNER_PREFIX};
use troupe_store::{StoreError, TaskFilter, TeamStore};

/// Why an ended member's tasks go back, from its roster entry: how it ended, or that its
/// process exited while it was still on the team (a resumable exit). `None` for a member
/// stopped from elsewhere: whoever stopped it gives its tasks back, saying who did (a stopper
/// that died before that leaves them to the liveness rule), so the member's own end must not
/// race it with a vaguer note.
pub async fn end_note(store: &dyn TeamStore, name: &str) -> Option<String> {
    let status = store.member(name).await.ok().flatten().map(|m| m.status);
    match status {
        Some(AgentStatus::Shutdown) => Some(format!("its owner {name} shut down")),
        Some(AgentStatus::Stopped) => None,
        Some(AgentStatus::Failed) => Some(format!("its owner {name} failed")),
        _ => Some(format!("its owner {name} left (its process exited)")),
    }
}

/// Gives every in-progress task of `owner` back to the board because `owner` ended (`why`
/// goes into each task's history), tells the lead and wakes the live teammates. Call it only
/// when `owner`'s incarnation is over, or from the process that now holds its lease. Returns
/// the released tasks.
pub async fn release_tasks_of(
    courier: &dyn Courier,
    owner: &str,
    why: &str,
) -> Result<Vec<Task>, StoreError> {
    let store = courier.store();
    let released = store
        .release_tasks_of(owner, SYSTEM_ACTOR, why, now_ms())
        .await?;
    announce(courier, owner, &released, why).await;
    Ok(released)
}

/// Gives back every in-progress task whose owner is not alive (no live process holds its
/// lease); tasks owned by people (`user:<name>`) are left alone. Each task is released under
/// the board's lock only if its owner is still not alive then, so an owner that came back
/// meanwhile keeps what it claimed. Returns the released tasks.
pub async fn release_ghost_tasks(courier: &dyn Courier) -> Result<Vec<Task>, StoreError> {
    let store = courier.store();
    let filter = TaskFilter {
        status: Some(TaskStatus::InProgress),
        owner: None,
    };
    let owners: BTreeSet<String> = store
        .list_tasks(&filter)
        .await?
        .tasks
        .into_iter()
        .filter_map(|t| t.owner)
        .filter(|o| !o.starts_with(USER_OWNER_PREFIX))
        .collect();
    let mut all = Vec::new();
    for owner in owners {
        // An owner whose name is not a valid agent name has no lease: not alive.
        if store.is_alive(&owner).await.unwrap_or(false) {
            continue;
        }
        let why = format!("its owner {owner} is not running (no live process holds its lease)");
        let released = release_if_not_alive(store, &owner, &why).await?;
        announce(courier, &owner, &released, &why).await;
        all.extend(released);
    }
    Ok(all)
}

/// `release_tasks_of`, with the owner's liveness checked again for each task, and the task
/// released only if unchanged since: an owner claims only while alive, so "not alive" seen
/// before an unchanged record means nobody alive can have claimed the task.
async fn release_if_not_alive(
    store: &dyn TeamStore,
    owner: &str,
    why: &str,
) -> Result<Vec<Task>, StoreError> {
    troupe_store::release_owned_where(store, owner, SYSTEM_ACTOR, why, now_ms(), || async {
        !store.is_alive(owner).await.unwrap_or(false)
    })
    .await
}

/// Tells the lead which tasks went back and why, and wakes the live teammates so an idle one
/// can take them; nothing when nothing was released. Failures are logged: the board already
/// holds the truth.
async fn announce(courier: &dyn Courier, owner: &str, released: &[Task], why: &str) {
    if released.is_empty() {
        return;
    }
    let list: Vec<String> = released
        .iter()
        .map(|t| format!("task {} \"{}\"", t.id, t.subject))
        .collect();
    let content = format!(
        "Back on the board, pending and unowned, because {why}: {}. Any teammate may claim them again.",
        list.join(", ")
    );
    let env = Envelope::new(MailKind::Message, SYSTEM_ACTOR, LEAD, content, now_ms());
    if let Err(e) = courier.deliver(env).await {
        tracing::warn!(error = %e, owner, "could not tell the lead about released tasks");
    }
    wake_live_teammates(courier.store()).await;
}

/// Wakes every live teammate (not the lead), so idle ones look at the board again.
pub async fn wake_live_teammates(store: &dyn TeamStore) {
    let roster = match store.roster().await {
        Ok(roster) => roster,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the roster to wake teammates");
            return;
        }
    };
    for name in roster.live_names() {
        if name == LEAD || !store.is_alive(&name).await.unwrap_or(false) {
            continue;
        }
        if let Err(e) = store.notify(&name).await {
            tracing::debug!(error = %e, member = %name, "could not wake a teammate");
        }
    }
}
