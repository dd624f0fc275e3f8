//! The task board as the team uses it (s12/s17): which tasks are ready, who takes work by
//! itself, what happens after a change (owners told, idle claimers woken) and the prompt an
//! auto-claimed task starts a work phase with. Shared by the task tools, a member's idle loop,
//! the settle rule and `troupe task`; the store's FSM decides every change itself.

pub mod render;

use crate::protocols::Courier;
use crate::spec::LEAD;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{
    AgentStatus, BlockerStatus, Envelope, MailKind, Member, Roster, Task, TaskStatus,
    USER_OWNER_PREFIX,
};
use troupe_store::{StoreError, TaskFilter, TeamStore};

/// What changed on the board, for [`after_change`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A task was put on the board.
    Created,
    /// A task was claimed (nothing became ready: nobody is woken).
    Claimed,
    /// A task was completed: tasks waiting on it may be ready now.
    Completed,
    /// A task failed.
    Failed,
    /// A task went back to pending.
    Released,
    /// A task was cancelled.
    Cancelled,
    /// Its description or blockers changed (new blockers may have made it ready).
    Edited,
}

impl Change {
    /// The change a transition to `status` is.
    pub fn to_status(status: TaskStatus) -> Change {
        match status {
            TaskStatus::Pending => Change::Released,
            TaskStatus::InProgress => Change::Claimed,
            TaskStatus::Completed => Change::Completed,
            TaskStatus::Failed => Change::Failed,
            TaskStatus::Cancelled => Change::Cancelled,
        }
    }
}

/// The status of every task on the board, as the blockers of any of them.
pub fn blocker_status(tasks: &[Task]) -> BlockerStatus {
    tasks.iter().map(|t| (t.id, t.status)).collect()
}

/// The ready tasks (pending, unowned, every blocker completed), by id.
pub fn ready(tasks: &[Task]) -> Vec<&Task> {
    let status = blocker_status(tasks);
    tasks.iter().filter(|t| t.is_ready(&status)).collect()
}

/// True when `name` owns an in-progress task: a member works on one task at a time, so it is
/// given no other until it completes, fails or releases that one.
pub fn holds_task(tasks: &[Task], name: &str) -> bool {
    tasks
        .iter()
        .any(|t| t.status == TaskStatus::InProgress && t.owner.as_deref() == Some(name))
}

/// True when the harness hands this member ready work: a teammate (never the lead, never a
/// person) that has not ended, did not opt out with `auto_claim: false`, and is not waiting
/// for its plan to be approved (it may not change anything yet).
pub fn claims_work(member: &Member) -> bool {
    member.auto_claim
        && !member.status.is_ended()
        && (member.plan_approved || !member.require_plan)
        && member.name != LEAD
        && !member.name.starts_with(USER_OWNER_PREFIX)
}

/// The idle auto-claiming teammates that are about to work on the board, whom the settle rule
/// counts as busy: one holding no task while a task is ready (it takes it as soon as it
/// looks), and one whose task was claimed since it went idle (the harness claimed it and is
/// starting its work phase). Read the roster before the board: a member claims first and
/// records that it works second.
pub fn claimers_with_work(roster: &Roster, tasks: &[Task]) -> Vec<String> {
    let any_ready = !ready(tasks).is_empty();
    roster
        .members
        .iter()
        .filter(|m| claims_work(m) && m.status == AgentStatus::Idle)
        .filter(|m| {
            let held = tasks_of(tasks, &m.name);
            if held.is_empty() {
                return any_ready;
            }
            // Claimed at or after it went idle: the work phase on it is starting.
            held.iter()
                .any(|t| claimed_at(t).is_some_and(|at| at >= m.last_seen))
        })
        .map(|m| m.name.clone())
        .collect()
}

/// When an in-progress task was last claimed.
fn claimed_at(task: &Task) -> Option<u64> {
    task.history
        .iter()
        .rev()
        .find(|h| h.to == TaskStatus::InProgress && h.from != TaskStatus::InProgress)
        .map(|h| h.at)
}

/// What an idle member does by itself when it has no mail: if the roster says it claims work
/// ([`claims_work`], this incarnation), [`claim_next`].
pub async fn claim_for_idle(
    store: &dyn TeamStore,
    name: &str,
    epoch: u64,
) -> Result<Option<Task>, StoreError> {
    // One member, not a copy of the whole roster per idle member.
    match store.member(name).await? {
        Some(m) if m.epoch == epoch && claims_work(&m) => claim_next(store, name).await,
        _ => Ok(None),
    }
}

/// Claims the first ready task for `name`, as an idle member does by itself: atomically in the
/// store, so a lost race (another claimer got there first) just moves on to the next ready
/// task. `None` when nothing is ready or `name` still holds a task.
pub async fn claim_next(store: &dyn TeamStore, name: &str) -> Result<Option<Task>, StoreError> {
    let board = store.list_tasks(&TaskFilter::default()).await?;
    if holds_task(&board.tasks, name) {
        return Ok(None);
    }
    for task in ready(&board.tasks) {
        match store.claim_task(task.id, name, now_ms()).await {
            Ok(claimed) => return Ok(Some(claimed)),
            // Taken, cancelled, edited or unreadable since the listing: try the next one.
            Err(
                StoreError::Task(_) | StoreError::UnknownTask { .. } | StoreError::Corrupt { .. },
            ) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The input of the work phase an auto-claimed task starts: what the task is and how to
/// finish it.
pub fn work_prompt(task: &Task) -> String {
    let mut text = format!(
        "<task id=\"{id}\">\nThe harness claimed task {id} from the team's task board for you: you own it now.\nSubject: {subject}\n",
        id = task.id,
        subject = task.subject
    );
    if !task.description.trim().is_empty() {
        text.push_str(&format!("Description:\n{}\n", task.description.trim_end()));
    }
    if let Some(wt) = &task.worktree {
        text.push_str(&format!("Worktree: {wt}\n"));
    }
    text.push_str(&format!(
        "Work on it now. When it is done, call complete_task{{id: {id}, result}} with a short account of the result; \
if you cannot do it, call update_task{{id: {id}, status: \"failed\", result}} saying why.\n</task>",
        id = task.id
    ));
    text
}

/// Wakes every teammate that claims work by itself (from any process, through the store), so
/// an idle one looks at the board again: the board's equivalent of new mail.
pub async fn notify_claimers(store: &dyn TeamStore) {
    let roster = match store.roster().await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the roster to wake idle claimers");
            return;
        }
    };
    for m in roster.members.iter().filter(|m| claims_work(m)) {
        if let Err(e) = store.notify(&m.name).await {
            tracing::debug!(member = %m.name, error = %e, "could not wake a claimer");
        }
    }
}

/// Tells the owners of tasks that wait on `done` (now completed) that it is, by mail; persons
/// (`user:`) have no mailbox and are skipped. Returns who was told.
pub async fn tell_waiting_owners(courier: &dyn Courier, done: &Task, by: &str) -> Vec<String> {
    let board = match courier.store().list_tasks(&TaskFilter::default()).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the board to tell waiting owners");
            return Vec::new();
        }
    };
    let status = blocker_status(&board.tasks);
    let mut told = Vec::new();
    for t in board
        .tasks
        .iter()
        .filter(|t| t.blocked_by.contains(&done.id))
    {
        let Some(owner) = t.owner.as_deref() else {
            continue;
        };
        if owner == by || owner.starts_with(USER_OWNER_PREFIX) || t.status.is_terminal() {
            continue;
        }
        let waiting = t.waiting_on(&status);
        let rest = if waiting.is_empty() {
            format!("task {} no longer waits on anything", t.id)
        } else {
            format!("task {} still waits on {}", t.id, render::id_list(&waiting))
        };
        let content = format!(
            "Task {} ({}), which your task {} ({}) waits on, is completed; {rest}. Result: {}",
            done.id,
            done.subject,
            t.id,
            t.subject,
            done.result.as_deref().unwrap_or("-")
        );
        let env = Envelope::new(MailKind::Message, by, owner, content, now_ms());
        match courier.deliver(env).await {
            Ok(()) => told.push(owner.to_string()),
            Err(e) => tracing::warn!(owner, error = %e, "could not tell a waiting owner"),
        }
    }
    told
}

/// Everything that follows a change to the board: a completion tells the owners of tasks that
/// wait on it, and every change that may have made a task ready wakes the idle claimers.
/// Returns who was told by mail.
pub async fn after_change(
    courier: &dyn Courier,
    task: &Task,
    change: Change,
    by: &str,
) -> Vec<String> {
    let told = if change == Change::Completed {
        tell_waiting_owners(courier, task, by).await
    } else {
        Vec::new()
    };
    if change != Change::Claimed {
        notify_claimers(courier.store()).await;
    }
    told
}

/// The board's part of the lead's system prompt.
pub fn lead_section() -> String {
    "# Task board\n\
The team shares a task board (create_task, list_tasks, get_task, update_task, complete_task). A task whose blockers \
(blocked_by) are all completed is ready; idle teammates take ready tasks by themselves unless spawned with \
auto_claim: false. You are never given tasks automatically. Only a task's owner or you can complete or fail it. For work \
with an order, create the tasks with their blocked_by links and let the teammates pull them."
        .to_string()
}

/// The board's part of a teammate's system prompt.
pub fn teammate_section(spec: &crate::spec::MemberSpec) -> String {
    let mut text = String::from(
        "# Task board\n\
The team shares a task board: list_tasks and get_task show it, create_task adds work, claim_task{id} takes a ready task \
(pending, unowned, its blockers completed), complete_task{id, result} finishes a task you own (tasks waiting on it may \
become ready; their owners are told), update_task{id, status: \"failed\", result} gives one up with the reason.",
    );
    if spec.auto_claim {
        text.push_str(
            "\nWhen you are idle with no mail and a task is ready, the harness claims it for you and starts your next work \
phase with it in a <task> block: work on it, then call complete_task. You are given one task at a time.",
        );
    } else {
        text.push_str("\nYou are not given tasks automatically: claim one with claim_task when the lead asks you to.");
    }
    text
}

/// Ids of the tasks `name` owns in progress, with their subjects (for `troupe team status`).
pub fn tasks_of<'a>(tasks: &'a [Task], name: &str) -> Vec<&'a Task> {
    tasks
        .iter()
        .filter(|t| t.status == TaskStatus::InProgress && t.owner.as_deref() == Some(name))
        .collect()
}

#[cfg(test)]
mod tests;
