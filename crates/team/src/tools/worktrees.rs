//! The worktree tools, for the lead and every teammate: create_worktree (which moves the
//! session into a worktree made without a task, as Claude Code's EnterWorktree does),
//! exit_worktree, remove_worktree, keep_worktree, list_worktrees. The work is done by [`Worktrees`], off the async workers.

use crate::shared::TeamShared;
use crate::worktree::table::{bound_text, state_text, worktrees_table};
use crate::worktree::{NewWorktree, Removal, WorktreeError, Worktrees};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use troupe_protocol::TaskId;
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// What [`with_manager`] runs: the manager's work, its store calls awaited.
type ManagerWork<R> = Box<
    dyn for<'a> FnOnce(&'a Worktrees<'a>) -> Pin<Box<dyn Future<Output = R> + Send + 'a>> + Send,
>;

/// Runs `work` with the team's worktree manager on the blocking pool: the manager runs git
/// and holds the worktree index's file lock there, and awaits its store calls on that thread.
async fn with_manager<R: Send + 'static>(shared: &Arc<TeamShared>, work: ManagerWork<R>) -> R {
    let (shared, handle) = (shared.clone(), tokio::runtime::Handle::current());
    let done = tokio::task::spawn_blocking(move || {
        let config = &shared.config;
        let manager = Worktrees::new(&config.workspace, &config.troupe_dir, shared.store.as_ref());
        handle.block_on(work(&manager))
    })
    .await;
    match done {
        Ok(r) => r,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

fn refusal(e: &WorktreeError) -> ToolOutput {
    ToolOutput::error(e.to_string())
}

/// Input of `create_worktree`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateWorktreeInput {
    /// Name: letters, digits, '-', '_' and '.'; it becomes .troupe/worktrees/<name> and branch wt/<name>.
    pub name: String,
    /// The task to bind it to: whoever owns that task works in this worktree.
    #[serde(default)]
    pub task_id: Option<TaskId>,
    /// Branch or commit to start from (default: the current HEAD).
    #[serde(default)]
    pub base: Option<String>,
    /// Move this session into it (bash and the file tools work there until exit_worktree).
    /// Default: true without a task_id, false with one.
    #[serde(default)]
    pub enter: Option<bool>,
}

/// `create_worktree{name, task_id?, base?}`.
pub struct CreateWorktree {
    shared: Arc<TeamShared>,
}

#[async_trait]
impl Tool for CreateWorktree {
    fn name(&self) -> &str {
        "create_worktree"
    }
    fn description(&self) -> &str {
        "Create a git worktree at .troupe/worktrees/<name> on a new branch wt/<name> (from base, default HEAD), \
optionally bound to a task: whoever owns that task then works inside it. Without a task_id (or with enter: true) your \
session moves into it: bash and the file tools work there until exit_worktree. Merge the branch when done, then remove_worktree."
    }
    fn input_schema(&self) -> Value {
        schema_of::<CreateWorktreeInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::CREATE_WORKTREE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: CreateWorktreeInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let by = ctx.agent.clone();
        let enter = input.enter.unwrap_or(input.task_id.is_none());
        let result = with_manager(
            &self.shared,
            Box::new(move |m| {
                Box::pin(async move {
                    m.create(&NewWorktree {
                        name: &input.name,
                        task: input.task_id,
                        base: input.base.as_deref(),
                        member: None,
                        by: &by,
                    })
                    .await
                })
            }),
        )
        .await;
        match result {
            Ok(r) => {
                let bound = match r.task {
                    Some(id) => format!(
                        " Bound to task {id}: whoever owns task {id} works in it (bash and every file tool run there)."
                    ),
                    None => String::new(),
                };
                let commit: String = r.base_commit.chars().take(8).collect();
                let entered = match enter {
                    true => {
                        enter_worktree(&self.shared, &ctx.agent, Some(&r.name));
                        " Your session now works in it: from your next step bash runs there and file paths resolve inside it; exit_worktree returns to the main tree."
                    }
                    false => "",
                };
                ToolOutput::ok(format!(
                    "Created worktree '{}' at {} on branch {} from {} ({commit}).{bound}{entered} When its work is done, merge {} and remove_worktree; keep_worktree leaves it in place.",
                    r.name,
                    r.path.display(),
                    r.branch,
                    r.base.as_deref().unwrap_or("a detached commit"),
                    r.branch
                ))
            }
            Err(e) => refusal(&e),
        }
    }
}

/// Records that `agent`'s session works in worktree `name` (`None`: back in the main tree);
/// returns the worktree it was in.
fn enter_worktree(shared: &TeamShared, agent: &str, name: Option<&str>) -> Option<String> {
    let mut entered = shared
        .entered
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match name {
        Some(name) => entered.insert(agent.to_string(), name.to_string()),
        None => entered.remove(agent),
    }
}

/// Input of `exit_worktree`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExitWorktreeInput {
    /// "keep" leaves the worktree and its branch on disk (the default); "remove" deletes both.
    #[serde(default)]
    pub action: Option<String>,
    /// With "remove": throw away uncommitted changes and unmerged commits (otherwise removal
    /// is refused while anything would be lost).
    #[serde(default)]
    pub discard_changes: bool,
}

/// `exit_worktree{action?, discard_changes?}`: Claude Code's ExitWorktree.
pub struct ExitWorktree {
    shared: Arc<TeamShared>,
}

#[async_trait]
impl Tool for ExitWorktree {
    fn name(&self) -> &str {
        "exit_worktree"
    }
    fn description(&self) -> &str {
        "Leave the worktree your session entered with create_worktree and return to the main tree. \
action \"keep\" (default) leaves it and its branch on disk; \"remove\" deletes both, refused while it holds \
uncommitted changes or unmerged commits unless discard_changes: true. Outside such a worktree it does nothing."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ExitWorktreeInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::EXIT_WORKTREE)
    }
    fn effect(&self, input: &Value) -> Effect {
        match input.get("discard_changes").and_then(Value::as_bool) {
            Some(true) => Effect::Execute,
            _ => Effect::Coordinate,
        }
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ExitWorktreeInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let remove = match input.action.as_deref() {
            None | Some("keep") => false,
            Some("remove") => true,
            Some(other) => {
                return ToolOutput::error(format!(
                    "action is \"keep\" or \"remove\", not \"{other}\""
                ))
            }
        };
        let Some(name) = enter_worktree(&self.shared, &ctx.agent, None) else {
            return ToolOutput::ok(
                "No worktree session is active (none was entered with create_worktree): nothing to exit.",
            );
        };
        let by = ctx.agent.clone();
        let n = name.clone();
        let removal = match input.discard_changes {
            true => Removal::Discard,
            false => Removal::KeepWork,
        };
        let done = with_manager(
            &self.shared,
            Box::new(move |m| {
                Box::pin(async move {
                    match remove {
                        true => m.remove(&n, removal, &by).await.map(|r| r.record),
                        false => m.keep(&n, &by).await,
                    }
                })
            }),
        )
        .await;
        let root = self.shared.config.workspace.display().to_string();
        match done {
            Ok(r) if remove => ToolOutput::ok(format!(
                "Removed worktree '{}' and branch {}. Your session is back in {root}: from your next step bash runs there and file paths resolve inside it.",
                r.name, r.branch
            )),
            Ok(r) => ToolOutput::ok(format!(
                "Left worktree '{}', kept at {} on branch {}. Your session is back in {root}: from your next step bash runs there and file paths resolve inside it.",
                r.name,
                r.path.display(),
                r.branch
            )),
            Err(e) => {
                enter_worktree(&self.shared, &ctx.agent, Some(&name));
                ToolOutput::error(format!("{e} Your session stays in worktree '{name}'."))
            }
        }
    }
}

/// Input of `remove_worktree`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveWorktreeInput {
    /// The worktree's name.
    pub name: String,
    /// Throw away uncommitted changes and unmerged commits. Without it, removal is refused while anything would be lost.
    #[serde(default)]
    pub discard: bool,
}

/// `remove_worktree{name, discard?}`.
pub struct RemoveWorktree {
    shared: Arc<TeamShared>,
}

#[async_trait]
impl Tool for RemoveWorktree {
    fn name(&self) -> &str {
        "remove_worktree"
    }
    fn description(&self) -> &str {
        "Remove a worktree and its branch wt/<name>. Refused while it has uncommitted changes or commits its base branch lacks \
(the error says how to merge or keep it); discard: true throws that work away, and is recorded."
    }
    fn input_schema(&self) -> Value {
        schema_of::<RemoveWorktreeInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::REMOVE_WORKTREE)
    }
    fn effect(&self, input: &Value) -> Effect {
        // Throwing work away is as consequential as any command: the permission rules judge it.
        match input.get("discard").and_then(Value::as_bool) {
            Some(true) => Effect::Execute,
            _ => Effect::Coordinate,
        }
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: RemoveWorktreeInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let by = ctx.agent.clone();
        let removal = match input.discard {
            true => Removal::Discard,
            false => Removal::KeepWork,
        };
        let name = input.name.clone();
        let removed = with_manager(
            &self.shared,
            Box::new(move |m| Box::pin(async move { m.remove(&name, removal, &by).await })),
        )
        .await;
        if removed.is_ok() {
            // Whoever had entered it is back in the main tree.
            let mut entered = self
                .shared
                .entered
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            entered.retain(|_, n| *n != input.name);
        }
        match removed {
            Ok(r) if removal == Removal::Discard => ToolOutput::ok(format!(
                "Removed worktree '{}' and branch {}, discarding {} (recorded in the team's event log).",
                r.record.name,
                r.record.branch,
                state_text(&r.lost).replace("clean", "nothing")
            )),
            Ok(r) => ToolOutput::ok(format!(
                "Removed worktree '{}' and branch {}: it was clean and its commits are on {}.",
                r.record.name,
                r.record.branch,
                r.record.base.as_deref().unwrap_or("another branch")
            )),
            Err(e) => refusal(&e),
        }
    }
}

/// Input of `keep_worktree`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeepWorktreeInput {
    /// The worktree's name.
    pub name: String,
}

/// `keep_worktree{name}`.
pub struct KeepWorktree {
    shared: Arc<TeamShared>,
}

#[async_trait]
impl Tool for KeepWorktree {
    fn name(&self) -> &str {
        "keep_worktree"
    }
    fn description(&self) -> &str {
        "Mark a worktree kept: it stays in place with its branch after its work is done (for a person to review or merge later)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<KeepWorktreeInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::KEEP_WORKTREE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: KeepWorktreeInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let by = ctx.agent.clone();
        match with_manager(
            &self.shared,
            Box::new(move |m| Box::pin(async move { m.keep(&input.name, &by).await })),
        )
        .await
        {
            Ok(r) => ToolOutput::ok(format!(
                "Kept worktree '{}' at {} (branch {}, {}).",
                r.name,
                r.path.display(),
                r.branch,
                bound_text(&r)
            )),
            Err(e) => refusal(&e),
        }
    }
}

/// Input of `list_worktrees` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListWorktreesInput {}

/// `list_worktrees`.
pub struct ListWorktrees {
    shared: Arc<TeamShared>,
}

#[async_trait]
impl Tool for ListWorktrees {
    fn name(&self) -> &str {
        "list_worktrees"
    }
    fn description(&self) -> &str {
        "List the worktrees: name, status (active, kept), branch, base, the task or teammate it is for, and whether it holds uncommitted changes or unmerged commits."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ListWorktreesInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LIST_WORKTREES)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        match with_manager(
            &self.shared,
            Box::new(|m| Box::pin(async move { m.list() })),
        )
        .await
        {
            Ok(list) if list.is_empty() => {
                ToolOutput::ok("No worktrees. Create one with create_worktree{name, task_id?}.")
            }
            Ok(list) => ToolOutput::ok(worktrees_table(&list)),
            Err(e) => refusal(&e),
        }
    }
}

/// The worktree tools, bound to a team.
pub fn worktree_tools(shared: &Arc<TeamShared>) -> Vec<DynTool> {
    vec![
        Arc::new(CreateWorktree {
            shared: shared.clone(),
        }),
        Arc::new(RemoveWorktree {
            shared: shared.clone(),
        }),
        Arc::new(KeepWorktree {
            shared: shared.clone(),
        }),
        Arc::new(ListWorktrees {
            shared: shared.clone(),
        }),
        Arc::new(ExitWorktree {
            shared: shared.clone(),
        }),
    ]
}
