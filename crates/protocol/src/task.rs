//! The task board's record (`tasks/<id>.json`) and its FSM as pure methods. The store persists
//! the record under a lock; these methods decide every change.
//!
//! ```text
//! pending --claim--> in_progress --complete--> completed
//!    ^                    |       --fail------> failed
//!    +------release-------+
//! pending | in_progress --cancel--> cancelled
//! ```
//!
//! Completed, failed and cancelled are terminal: nothing about the task changes any more.
//! A pending task never has an owner; an in-progress task always has one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::ids::SYSTEM_ACTOR;

/// A task's small integer id ("task 3"), allocated by the store.
pub type TaskId = u64;

/// The name of the lead, who may complete, fail, release or cancel any task.
pub const TASK_LEAD: &str = "lead";

pub use crate::ids::USER_OWNER_PREFIX;

/// The statuses of a task's blockers, as read by the store under its lock: an id that is
/// missing here (unknown, unreadable) counts as not completed.
pub type BlockerStatus = BTreeMap<TaskId, TaskStatus>;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for an owner (and perhaps for its blockers).
    Pending,
    /// Claimed; its owner is working on it.
    InProgress,
    /// Done, with a result.
    Completed,
    /// Given up, with the reason as its result.
    Failed,
    /// Withdrawn before it was done.
    Cancelled,
}

impl TaskStatus {
    /// True once the task can never change again.
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Pending | TaskStatus::InProgress => false,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled => true,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One status change, appended to the task's history; an edit (description, blockers) is an
/// entry whose status stays the same, its note saying what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTransition {
    /// Status before.
    pub from: TaskStatus,
    /// Status after.
    pub to: TaskStatus,
    /// Who caused it (an agent, `user:<name>`, or the harness itself).
    pub by: String,
    /// When, in ms since the Unix epoch.
    pub at: u64,
    /// Why, when there is more to say (a release names the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One task on the board, stored as `tasks/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Small integer id, unique on the team's board.
    pub id: TaskId,
    /// One line saying what is to be done.
    pub subject: String,
    /// Details, possibly empty.
    #[serde(default)]
    pub description: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Who is working on it (always set while in progress, never while pending).
    #[serde(default)]
    pub owner: Option<String>,
    /// Tasks that must be completed before this one is ready.
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    /// The git worktree bound to this task, by name.
    #[serde(default)]
    pub worktree: Option<String>,
    /// What came of it (the failure reason for a failed task).
    #[serde(default)]
    pub result: Option<String>,
    /// Who put it on the board.
    pub created_by: String,
    /// When it was created, in ms since the Unix epoch.
    pub created_at: u64,
    /// When it last changed, in ms since the Unix epoch.
    pub updated_at: u64,
    /// Every status change and edit, oldest first.
    #[serde(default)]
    pub history: Vec<TaskTransition>,
}

/// Why a task change was refused; each message says what happened and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TaskError {
    /// A task needs a subject.
    #[error("a task needs a non-empty subject saying what is to be done")]
    EmptySubject,
    /// The task is owned by someone already.
    #[error(
        "task {id} is already owned by {owner} ({status}); pick another ready task or ask {owner}"
    )]
    Owned {
        /// The task.
        id: TaskId,
        /// Who owns it.
        owner: String,
        /// Its status.
        status: TaskStatus,
    },
    /// The task cannot be claimed in its current status.
    #[error("task {id} is {status}, only a pending task can be claimed; list the pending tasks")]
    NotClaimable {
        /// The task.
        id: TaskId,
        /// Its status.
        status: TaskStatus,
    },
    /// Some blockers are not completed yet.
    #[error(
        "task {id} is blocked by task(s) {} that are not completed yet; claim it once they are",
        ids(waiting_on)
    )]
    Blocked {
        /// The task.
        id: TaskId,
        /// Blockers that are not completed (or unknown).
        waiting_on: Vec<TaskId>,
    },
    /// Completing, failing or releasing needs an in-progress task.
    #[error("task {id} is {status}; only an in-progress task can be {action} (claim it first)")]
    NotInProgress {
        /// The task.
        id: TaskId,
        /// Its status.
        status: TaskStatus,
        /// "completed", "failed", "released".
        action: &'static str,
    },
    /// Someone other than the owner (or the lead) tried to finish or release the task.
    #[error("task {id} is owned by {owner}; {by} cannot mark it {action} (only {owner} or the lead can)")]
    NotOwner {
        /// The task.
        id: TaskId,
        /// Who owns it.
        owner: String,
        /// Who tried.
        by: String,
        /// What was tried.
        action: &'static str,
    },
    /// The task is finished and cannot change any more.
    #[error(
        "task {id} is already {status}; it cannot change any more (create a new task if needed)"
    )]
    Terminal {
        /// The task.
        id: TaskId,
        /// Its terminal status.
        status: TaskStatus,
    },
    /// A teammate tried to change a task it neither owns nor created.
    #[error("task {id} is {whose}; {by} cannot change it (only its owner, its creator or the lead can): send them a message asking for the change, or create a task of your own")]
    NotYours {
        /// The task.
        id: TaskId,
        /// Whose it is: "owned by bob, created by lead" or "unowned, created by lead".
        whose: String,
        /// Who tried.
        by: String,
    },
    /// Only the lead, the creator or the owner may cancel.
    #[error("task {id} may be cancelled only by the lead, its creator {created_by} or its owner; not by {by}")]
    NotAllowedToCancel {
        /// The task.
        id: TaskId,
        /// Who created it.
        created_by: String,
        /// Who tried.
        by: String,
    },
    /// A task names a blocker that is not on the board.
    #[error("task {task} is blocked by task {blocker}, which does not exist; list the tasks for valid ids")]
    UnknownBlocker {
        /// The task naming it.
        task: TaskId,
        /// The missing id.
        blocker: TaskId,
    },
    /// The dependencies form a cycle, so none of its tasks could ever become ready.
    #[error("dependency cycle: {} (a task cannot wait, even indirectly, on itself); remove one of these blocked_by links", cycle_text(cycle))]
    Cycle {
        /// The tasks on the cycle, each blocked by the next; the first repeats at the end.
        cycle: Vec<TaskId>,
    },
}

fn ids(list: &[TaskId]) -> String {
    list.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn cycle_text(cycle: &[TaskId]) -> String {
    cycle
        .iter()
        .map(|i| format!("task {i}"))
        .collect::<Vec<_>>()
        .join(" is blocked by ")
}

impl Task {
    /// A new pending, unowned task. The store allocates `id` and checks the blockers exist.
    pub fn new(
        id: TaskId,
        subject: impl Into<String>,
        description: impl Into<String>,
        blocked_by: Vec<TaskId>,
        created_by: impl Into<String>,
        now: u64,
    ) -> Result<Task, TaskError> {
        let subject = subject.into().trim().to_string();
        if subject.is_empty() {
            return Err(TaskError::EmptySubject);
        }
        let mut blocked_by = blocked_by;
        blocked_by.sort_unstable();
        blocked_by.dedup();
        Ok(Task {
            id,
            subject,
            description: description.into(),
            status: TaskStatus::Pending,
            owner: None,
            blocked_by,
            worktree: None,
            result: None,
            created_by: created_by.into(),
            created_at: now,
            updated_at: now,
            history: Vec::new(),
        })
    }

    /// The blockers that are not completed according to `blockers` (missing ids count).
    pub fn waiting_on(&self, blockers: &BlockerStatus) -> Vec<TaskId> {
        self.blocked_by
            .iter()
            .copied()
            .filter(|b| blockers.get(b) != Some(&TaskStatus::Completed))
            .collect()
    }

    /// True when the task is pending, unowned and every blocker is completed.
    pub fn is_ready(&self, blockers: &BlockerStatus) -> bool {
        self.status == TaskStatus::Pending
            && self.owner.is_none()
            && self.waiting_on(blockers).is_empty()
    }

    /// True when the owner is a person (`user:<name>`), whose tasks no teammate takes.
    pub fn owned_by_person(&self) -> bool {
        self.owner
            .as_deref()
            .is_some_and(|o| o.starts_with(USER_OWNER_PREFIX))
    }

    /// Takes a ready task for `by`: pending → in progress, owned by `by`.
    pub fn claim(&mut self, by: &str, blockers: &BlockerStatus, now: u64) -> Result<(), TaskError> {
        if let Some(owner) = &self.owner {
            return Err(TaskError::Owned {
                id: self.id,
                owner: owner.clone(),
                status: self.status,
            });
        }
        if self.status != TaskStatus::Pending {
            return Err(TaskError::NotClaimable {
                id: self.id,
                status: self.status,
            });
        }
        let waiting_on = self.waiting_on(blockers);
        if !waiting_on.is_empty() {
            return Err(TaskError::Blocked {
                id: self.id,
                waiting_on,
            });
        }
        self.owner = Some(by.to_string());
        self.transition(TaskStatus::InProgress, by, now, None);
        Ok(())
    }

    /// Marks the task completed with its result; only the owner or the lead may.
    pub fn complete(
        &mut self,
        by: &str,
        result: impl Into<String>,
        now: u64,
    ) -> Result<(), TaskError> {
        self.check_owner(by, "completed")?;
        self.result = Some(result.into());
        self.transition(TaskStatus::Completed, by, now, None);
        Ok(())
    }

    /// Marks the task failed with the reason as its result; only the owner or the lead may.
    pub fn fail(&mut self, by: &str, reason: impl Into<String>, now: u64) -> Result<(), TaskError> {
        self.check_owner(by, "failed")?;
        self.result = Some(reason.into());
        self.transition(TaskStatus::Failed, by, now, None);
        Ok(())
    }

    /// Gives an in-progress task back to the board (pending, owner cleared), saying why: by its
    /// owner, the lead, or the harness when the owner has ended.
    pub fn release(&mut self, by: &str, why: impl Into<String>, now: u64) -> Result<(), TaskError> {
        if by != SYSTEM_ACTOR {
            self.check_owner(by, "released")?;
        } else {
            self.check_in_progress("released")?;
        }
        self.owner = None;
        self.transition(TaskStatus::Pending, by, now, Some(why.into()));
        Ok(())
    }

    /// Withdraws a pending or in-progress task; by the lead, its creator or its owner.
    pub fn cancel(&mut self, by: &str, why: Option<String>, now: u64) -> Result<(), TaskError> {
        self.check_not_terminal()?;
        let allowed = by == TASK_LEAD || by == self.created_by || self.owner.as_deref() == Some(by);
        if !allowed {
            return Err(TaskError::NotAllowedToCancel {
                id: self.id,
                created_by: self.created_by.clone(),
                by: by.to_string(),
            });
        }
        self.transition(TaskStatus::Cancelled, by, now, why);
        Ok(())
    }

    /// Replaces the description of a task that is not finished.
    pub fn set_description(
        &mut self,
        description: impl Into<String>,
        now: u64,
    ) -> Result<(), TaskError> {
        self.check_not_terminal()?;
        self.description = description.into();
        self.updated_at = now;
        Ok(())
    }

    /// Replaces the blockers of a task that is not finished. The store checks the whole board
    /// with [`check_dependencies`] before saving.
    pub fn set_blocked_by(&mut self, blocked_by: Vec<TaskId>, now: u64) -> Result<(), TaskError> {
        self.check_not_terminal()?;
        let mut blocked_by = blocked_by;
        blocked_by.sort_unstable();
        blocked_by.dedup();
        self.blocked_by = blocked_by;
        self.updated_at = now;
        Ok(())
    }

    /// Refuses `by` changing the task's description or blockers unless it is the lead, the
    /// task's creator or its owner.
    pub fn check_may_edit(&self, by: &str) -> Result<(), TaskError> {
        if by == TASK_LEAD || by == self.created_by || self.owner.as_deref() == Some(by) {
            return Ok(());
        }
        let whose = match &self.owner {
            Some(owner) => format!("owned by {owner}, created by {}", self.created_by),
            None => format!("unowned, created by {}", self.created_by),
        };
        Err(TaskError::NotYours {
            id: self.id,
            whose,
            by: by.to_string(),
        })
    }

    /// Replaces the description as `by`, and says so in the history.
    pub fn edit_description(
        &mut self,
        by: &str,
        description: impl Into<String>,
        now: u64,
    ) -> Result<(), TaskError> {
        self.set_description(description, now)?;
        self.record_edit(by, "description changed".into(), now);
        Ok(())
    }

    /// Replaces the blockers as `by`, and says so in the history.
    pub fn edit_blocked_by(
        &mut self,
        by: &str,
        blocked_by: Vec<TaskId>,
        now: u64,
    ) -> Result<(), TaskError> {
        self.set_blocked_by(blocked_by, now)?;
        let note = match self.blocked_by.is_empty() {
            true => "blockers cleared".to_string(),
            false => {
                let ids: Vec<String> = self.blocked_by.iter().map(ToString::to_string).collect();
                format!("blocked by {}", ids.join(", "))
            }
        };
        self.record_edit(by, note, now);
        Ok(())
    }

    /// An edit in the history: an entry whose status stays what it was, with what changed.
    fn record_edit(&mut self, by: &str, note: String, now: u64) {
        self.history.push(TaskTransition {
            from: self.status,
            to: self.status,
            by: by.to_string(),
            at: now,
            note: Some(note),
        });
    }

    /// Binds (or with `None` unbinds) a worktree to a task that is not finished.
    pub fn set_worktree(&mut self, worktree: Option<String>, now: u64) -> Result<(), TaskError> {
        self.check_not_terminal()?;
        self.worktree = worktree;
        self.updated_at = now;
        Ok(())
    }

    fn check_not_terminal(&self) -> Result<(), TaskError> {
        if self.status.is_terminal() {
            return Err(TaskError::Terminal {
                id: self.id,
                status: self.status,
            });
        }
        Ok(())
    }

    fn check_in_progress(&self, action: &'static str) -> Result<(), TaskError> {
        self.check_not_terminal()?;
        if self.status != TaskStatus::InProgress {
            return Err(TaskError::NotInProgress {
                id: self.id,
                status: self.status,
                action,
            });
        }
        Ok(())
    }

    fn check_owner(&self, by: &str, action: &'static str) -> Result<(), TaskError> {
        self.check_in_progress(action)?;
        let owner = self.owner.as_deref().unwrap_or_default();
        if by != owner && by != TASK_LEAD {
            return Err(TaskError::NotOwner {
                id: self.id,
                owner: owner.to_string(),
                by: by.to_string(),
                action,
            });
        }
        Ok(())
    }

    fn transition(&mut self, to: TaskStatus, by: &str, now: u64, note: Option<String>) {
        self.history.push(TaskTransition {
            from: self.status,
            to,
            by: by.to_string(),
            at: now,
            note,
        });
        self.status = to;
        self.updated_at = now;
    }
}

/// Checks the board's dependency graph: every blocker exists and there is no cycle (a task
/// blocked by itself is a cycle of one). Returns the first problem found, in id order.
pub fn check_dependencies(tasks: &[Task]) -> Result<(), TaskError> {
    let graph: BTreeMap<TaskId, &[TaskId]> = tasks
        .iter()
        .map(|t| (t.id, t.blocked_by.as_slice()))
        .collect();
    for (&task, blockers) in &graph {
        if let Some(&blocker) = blockers.iter().find(|b| !graph.contains_key(b)) {
            return Err(TaskError::UnknownBlocker { task, blocker });
        }
    }
    // Iterative depth-first search with colours: a grey node reached again closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        Grey,
        Black,
    }
    let mut colour: BTreeMap<TaskId, Colour> = BTreeMap::new();
    for &start in graph.keys() {
        if colour.contains_key(&start) {
            continue;
        }
        // Each frame: a node and the index of its next blocker to visit.
        let mut stack: Vec<(TaskId, usize)> = vec![(start, 0)];
        colour.insert(start, Colour::Grey);
        while let Some(frame) = stack.last_mut() {
            let node = frame.0;
            let blockers = graph.get(&node).copied().unwrap_or_default();
            if let Some(&b) = blockers.get(frame.1) {
                frame.1 += 1;
                match colour.get(&b) {
                    Some(Colour::Black) => {}
                    Some(Colour::Grey) => {
                        let from = stack.iter().position(|&(n, _)| n == b).unwrap_or(0);
                        let mut cycle: Vec<TaskId> =
                            stack[from..].iter().map(|&(n, _)| n).collect();
                        cycle.push(b);
                        return Err(TaskError::Cycle { cycle });
                    }
                    None => {
                        colour.insert(b, Colour::Grey);
                        stack.push((b, 0));
                    }
                }
            } else {
                colour.insert(node, Colour::Black);
                stack.pop();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
