//! `TaskCreated` / `TaskCompleted` hooks for the board tools: the lifecycle hooks of the
//! extensions every teammate of this process shares (the recipe's shared extensions in a
//! teammate's form), asked before a task is created or completed.
//! `create_task` and `complete_task` ask before the store changes anything; feedback refuses
//! the change as the tool's error result.

use crate::shared::TeamShared;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use troupe_agent::{AgentKind, ExtensionContext, TaskInfo};

/// Asks the task hooks whether `agent` may make the change `task` describes: `Some(feedback)`
/// refuses it (a hook exited 2 or said `block`), with feedback for the model.
pub async fn task_change(shared: &TeamShared, agent: &str, task: TaskInfo<'_>) -> Option<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let cx = ExtensionContext {
        agent,
        workspace: &shared.config.workspace,
        stop: &stop,
        transcript: None,
        // Task hooks do not look at a mode.
        mode: &troupe_agent::LiveMode::new(Default::default()),
        dirs: None,
    };
    let mut refusals = Vec::new();
    let kind = AgentKind::Member {
        group: shared.config.team.clone(),
    };
    let extensions = (shared.config.recipe.shared)(&kind);
    for hooks in extensions.iter().filter_map(|e| e.lifecycle(&cx)) {
        let verdict = hooks.task_change(task).await;
        refusals.extend(verdict.block.or(verdict.halt));
    }
    (!refusals.is_empty()).then(|| refusals.join("\n"))
}
