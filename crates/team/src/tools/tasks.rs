//! The task board's tools, for the lead and every teammate (the course's names): create_task,
//! list_tasks, get_task, claim_task, update_task, complete_task. The store's FSM decides every
//! change (a claim is atomic across processes; only the owner or the lead finishes a task);
//! after a change the board wakes idle claimers and tells waiting owners ([`crate::board`]).
//! Every call reaches the store off the async workers.

use super::task_changes::{CompleteTask, UpdateTask};
use crate::board::render::{corrupt_lines, state, task_detail, tasks_table};
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
use troupe_protocol::{Task, TaskId, TaskStatus};
use troupe_store::{NewTask, StoreError, TaskFilter};
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// The six task tools, bound to a team.
pub fn task_tools(shared: &Arc<TeamShared>) -> Vec<DynTool> {
    vec![
        Arc::new(CreateTask(shared.clone())),
        Arc::new(ListTasks(shared.clone())),
        Arc::new(GetTask(shared.clone())),
        Arc::new(ClaimTask(shared.clone())),
        Arc::new(UpdateTask(shared.clone())),
        Arc::new(CompleteTask(shared.clone())),
    ]
}

/// Parses a status as written on the wire (`pending`, `in_progress`, …).
pub fn parse_task_status(s: &str) -> Result<TaskStatus, String> {
    let norm = s.trim().to_ascii_lowercase().replace('-', "_");
    serde_json::from_value(Value::String(norm)).map_err(|_| {
        format!(
            "unknown task status '{s}' (use pending, in_progress, completed, failed or cancelled)"
        )
    })
}

/// Input of `create_task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateTaskInput {
    /// One line saying what is to be done.
    pub subject: String,
    /// Details: what done looks like, files involved, constraints.
    #[serde(default)]
    pub description: Option<String>,
    /// Ids of tasks that must be completed before this one can be claimed.
    #[serde(default)]
    pub blocked_by: Option<Vec<TaskId>>,
}

/// `create_task{subject, description?, blocked_by?}`: puts a pending task on the board.
pub struct CreateTask(Arc<TeamShared>);

#[async_trait]
impl Tool for CreateTask {
    fn name(&self) -> &str {
        "create_task"
    }
    fn description(&self) -> &str {
        "Put a task on the team's shared task board. It gets a small integer id. blocked_by lists tasks that must be completed first; a task whose blockers are all completed is ready, and idle teammates take ready tasks by themselves."
    }
    fn input_schema(&self) -> Value {
        schema_of::<CreateTaskInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::CREATE_TASK)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: CreateTaskInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let new = NewTask {
            subject: input.subject,
            description: input.description.unwrap_or_default(),
            blocked_by: input.blocked_by.unwrap_or_default(),
            created_by: ctx.agent.clone(),
        };
        let info = TaskInfo {
            change: TaskChange::Created,
            id: "",
            subject: &new.subject,
            description: &new.description,
            team: &self.0.config.team,
        };
        if let Some(feedback) = task_change(&self.0, &ctx.agent, info).await {
            return ToolOutput::error(format!("a TaskCreated hook refused it: {feedback}"));
        }
        let by = ctx.agent.clone();
        let created = async {
            let s: &TeamShared = &self.0;
            let task = s.store.create_task(&new).await?;
            board::after_change(s, &task, Change::Created, &by).await;
            let board = s.store.list_tasks(&TaskFilter::default()).await?;
            Ok::<_, StoreError>((task, board::blocker_status(&board.tasks)))
        }
        .await;
        match created {
            Ok((t, status)) => ToolOutput::ok(format!(
                "Created task {}: {} — {}.",
                t.id,
                t.subject,
                state(&t, &status)
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `list_tasks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListTasksInput {
    /// Only tasks in this status: pending, in_progress, completed, failed or cancelled.
    #[serde(default)]
    pub status: Option<String>,
    /// Only tasks owned by this agent (or person, `user:<name>`).
    #[serde(default)]
    pub owner: Option<String>,
}

/// `list_tasks{status?, owner?}`: the board as a table; unreadable records are reported.
pub struct ListTasks(Arc<TeamShared>);

#[async_trait]
impl Tool for ListTasks {
    fn name(&self) -> &str {
        "list_tasks"
    }
    fn description(&self) -> &str {
        "List the team's tasks with status (pending tasks say whether they are ready or what they wait on), owner, blockers and subject."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ListTasksInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LIST_TASKS)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: ListTasksInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let status = match input.status.as_deref().map(parse_task_status).transpose() {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(e),
        };
        let filter = TaskFilter {
            status,
            owner: input.owner,
        };
        let listed = self.0.store.list_tasks(&TaskFilter::default()).await;
        let board = match listed {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let all = board::blocker_status(&board.tasks);
        let shown: Vec<Task> = board
            .tasks
            .into_iter()
            .filter(|t| filter.matches(t))
            .collect();
        let mut text = if shown.is_empty() && filter == TaskFilter::default() {
            "The task board is empty. Put work on it with create_task.\n".to_string()
        } else if shown.is_empty() {
            "No task matches.\n".to_string()
        } else {
            tasks_table(&shown, &all)
        };
        for line in corrupt_lines(&board.corrupt) {
            text.push_str(&format!("warning: {line}\n"));
        }
        ToolOutput::ok(text.trim_end().to_string())
    }
}

/// Input of `get_task` and `claim_task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskIdInput {
    /// The task's id.
    pub id: TaskId,
}

/// `get_task{id}`: one task in full, with its history.
pub struct GetTask(Arc<TeamShared>);

#[async_trait]
impl Tool for GetTask {
    fn name(&self) -> &str {
        "get_task"
    }
    fn description(&self) -> &str {
        "Show one task in full: status, owner, blockers, description, result and history."
    }
    fn input_schema(&self) -> Value {
        schema_of::<TaskIdInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::TASK_ID)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: TaskIdInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let got = async {
            let s: &TeamShared = &self.0;
            let task = s.store.get_task(input.id).await?;
            let board = s.store.list_tasks(&TaskFilter::default()).await?;
            Ok::<_, StoreError>((task, board::blocker_status(&board.tasks)))
        }
        .await;
        match got {
            Ok((t, status)) => ToolOutput::ok(task_detail(&t, &status, now_ms()).trim_end()),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// `claim_task{id}`: takes a ready task; atomic across processes.
pub struct ClaimTask(Arc<TeamShared>);

#[async_trait]
impl Tool for ClaimTask {
    fn name(&self) -> &str {
        "claim_task"
    }
    fn description(&self) -> &str {
        "Claim a ready task (pending, unowned, every blocker completed) so you own it. Exactly one claimer wins; otherwise the error names the owner or the blockers."
    }
    fn input_schema(&self) -> Value {
        schema_of::<TaskIdInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::TASK_ID)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: TaskIdInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let by = ctx.agent.clone();
        let claimed = self.0.store.claim_task(input.id, &by, now_ms()).await;
        match claimed {
            Ok(t) => ToolOutput::ok(format!(
                "You own task {} now: {}.{} When it is done, call complete_task{{id: {}, result}}.",
                t.id,
                t.subject,
                if t.description.trim().is_empty() {
                    String::new()
                } else {
                    format!("\nDescription:\n{}\n", t.description.trim_end())
                },
                t.id
            )),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
