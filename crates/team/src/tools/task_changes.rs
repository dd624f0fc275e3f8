//! The task tools that change a task in place: update_task (edits and status changes in one
//! atomic update) and complete_task. After a change, waiting owners are told and idle
//! claimers woken ([`crate::board::after_change`]).

use super::tasks::parse_task_status;
use crate::board::{self, Change};
use crate::shared::TeamShared;
use crate::task_hooks::task_change;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use troupe_agent::transcript::now_ms;
use troupe_agent::{TaskChange, TaskInfo};
use troupe_protocol::{BlockerStatus, Task, TaskError, TaskId, TaskStatus};
use troupe_store::StoreError;
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

/// What a tool says after a change that told waiting owners by mail.
fn told_note(told: &[String]) -> String {
    if told.is_empty() {
        String::new()
    } else {
        format!(" Told {} (their tasks wait on it).", told.join(", "))
    }
}

/// Input of `update_task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateTaskInput {
    /// The task's id.
    pub id: TaskId,
    /// New status: in_progress, pending, completed, failed or cancelled.
    #[serde(default)]
    pub status: Option<String>,
    /// New description.
    #[serde(default)]
    pub description: Option<String>,
    /// New list of blockers (replaces the old one); unknown ids and cycles are refused.
    #[serde(default)]
    pub blocked_by: Option<Vec<TaskId>>,
    /// The result (status completed), the reason (failed or cancelled).
    #[serde(default)]
    pub result: Option<String>,
}

/// The status change an update asks for, checked before anything is read.
#[derive(Debug, Clone)]
enum StatusChange {
    Claim,
    Release,
    Complete(String),
    Fail(String),
    Cancel(Option<String>),
}

fn status_change(
    status: Option<&str>,
    result: Option<String>,
) -> Result<Option<StatusChange>, String> {
    let Some(status) = status else {
        return match result {
            Some(_) => Err(
                "a result goes with status completed or failed (or use complete_task{id, result})"
                    .into(),
            ),
            None => Ok(None),
        };
    };
    let need = |what: &str| -> Result<String, String> {
        result
            .clone()
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| format!("status {what} needs a result saying what came of it"))
    };
    Ok(Some(match parse_task_status(status)? {
        TaskStatus::InProgress => StatusChange::Claim,
        TaskStatus::Pending => StatusChange::Release,
        TaskStatus::Completed => StatusChange::Complete(need("completed")?),
        TaskStatus::Failed => StatusChange::Fail(need("failed")?),
        TaskStatus::Cancelled => StatusChange::Cancel(result.clone()),
    }))
}

/// `update_task{id, status?, description?, blocked_by?, result?}`: edits and status changes in
/// one atomic update.
pub struct UpdateTask(pub(super) Arc<TeamShared>);

#[async_trait]
impl Tool for UpdateTask {
    fn name(&self) -> &str {
        "update_task"
    }
    fn description(&self) -> &str {
        "Change a task: its description or its blockers (a task you own or created; the lead may change any), or its status (in_progress claims it, pending gives it back, completed/failed need a result and only the owner or the lead may set them, cancelled withdraws it). All changes apply together or not at all."
    }
    fn input_schema(&self) -> Value {
        schema_of::<UpdateTaskInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::UPDATE_TASK)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: UpdateTaskInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let change = match status_change(input.status.as_deref(), input.result) {
            Ok(c) => c,
            Err(e) => return ToolOutput::error(e),
        };
        if change.is_none() && input.description.is_none() && input.blocked_by.is_none() {
            return ToolOutput::error(
                "nothing to update: give status, description, blocked_by or result",
            );
        }
        let by = ctx.agent.clone();
        let (description, blocked_by) = (input.description, input.blocked_by);
        let updated = change_task(&self.0, &ctx.agent, input.id, move |t, b| {
            let now = now_ms();
            if description.is_some() || blocked_by.is_some() {
                t.check_may_edit(&by)?;
            }
            if let Some(d) = &description {
                t.edit_description(&by, d.clone(), now)?;
            }
            if let Some(list) = &blocked_by {
                t.edit_blocked_by(&by, list.clone(), now)?;
            }
            match &change {
                None => Ok(()),
                Some(StatusChange::Claim) => t.claim(&by, b, now),
                Some(StatusChange::Release) => t.release(&by, format!("released by {by}"), now),
                Some(StatusChange::Complete(r)) => t.complete(&by, r.clone(), now),
                Some(StatusChange::Fail(r)) => t.fail(&by, r.clone(), now),
                Some(StatusChange::Cancel(why)) => t.cancel(&by, why.clone(), now),
            }
        })
        .await;
        match updated {
            Ok((t, told)) => ToolOutput::ok(format!(
                "Task {} ({}) is {}{}.{}",
                t.id,
                t.subject,
                t.status,
                t.owner
                    .as_deref()
                    .map(|o| format!(", owned by {o}"))
                    .unwrap_or_default(),
                told_note(&told)
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Applies `f` to the task as `agent` in one store update (the blockers' statuses read under
/// the same lock), off the async workers; then what follows the change (waiting owners told,
/// idle claimers woken). Returns the task and who was told.
async fn change_task(
    shared: &Arc<TeamShared>,
    agent: &str,
    id: TaskId,
    f: impl FnMut(&mut Task, &BlockerStatus) -> Result<(), TaskError> + Send + 'static,
) -> Result<(Task, Vec<String>), StoreError> {
    let by = agent.to_string();
    async {
        let s: &TeamShared = shared;
        let mut f = f;
        let mut before = None;
        let task = s
            .store
            .update_task(id, &mut |t, b| {
                before = Some(t.status);
                f(t, b)
            })
            .await?;
        let change = match before {
            Some(status) if status != task.status => Change::to_status(task.status),
            _ => Change::Edited,
        };
        let told = board::after_change(s, &task, change, &by).await;
        Ok((task, told))
    }
    .await
}

/// Input of `complete_task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompleteTaskInput {
    /// The task's id.
    pub id: TaskId,
    /// What came of it: a short account others can rely on.
    pub result: String,
}

/// `complete_task{id, result}`: marks your task completed; tasks waiting on it may become ready.
pub struct CompleteTask(pub(super) Arc<TeamShared>);

#[async_trait]
impl Tool for CompleteTask {
    fn name(&self) -> &str {
        "complete_task"
    }
    fn description(&self) -> &str {
        "Mark a task you own completed, with its result. Only its owner or the lead may. Tasks waiting on it become ready when all their blockers are completed; their owners are told."
    }
    fn input_schema(&self) -> Value {
        schema_of::<CompleteTaskInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::COMPLETE_TASK)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: CompleteTaskInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.result.trim().is_empty() {
            return ToolOutput::error("give a result: a short account of what came of the task");
        }
        // The hooks judge the task as it stands; an unknown id is the change's own error below.
        let id = input.id;
        if let Ok(task) = self.0.store.get_task(id).await {
            let id = task.id.to_string();
            let info = TaskInfo {
                change: TaskChange::Completed,
                id: &id,
                subject: &task.subject,
                description: &task.description,
                team: &self.0.config.team,
            };
            if let Some(feedback) = task_change(&self.0, &ctx.agent, info).await {
                return ToolOutput::error(format!("a TaskCompleted hook refused it: {feedback}"));
            }
        }
        let by = ctx.agent.clone();
        let result = input.result;
        match change_task(&self.0, &ctx.agent, input.id, move |t, _| {
            t.complete(&by, result.clone(), now_ms())
        })
        .await
        {
            Ok((t, told)) => ToolOutput::ok(format!(
                "Task {} ({}) is completed.{}",
                t.id,
                t.subject,
                told_note(&told)
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
