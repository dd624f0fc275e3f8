//! The `task` subagent (s20's one-shot delegation; Claude Code's `Task` shape
//! `{description, prompt, subagent_type?}`): a fresh agent with its own conversation and tool
//! set does the work, and only its final text comes back as the tool result. Several `task`
//! calls in one response run at the same time.

use crate::agents::{AgentDefinition, Definitions};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use troupe_agent::permissions::PermissionMode;
use troupe_agent::{Agent, AgentEvent, Extension, ExtensionContext, LiveMode, TurnEnd};
use troupe_protocol::Usage;
use troupe_tools::{
    parse_input, schema_of, summarize_input, DynTool, Effect, Tool, ToolContext, ToolOutput,
};

/// Builds the agents that `task` runs; the binary supplies it, so the subagent is made the way
/// its parent was (model, settings, permission rules, approver) — without a `task` tool of its
/// own, so delegation does not nest.
pub trait SubagentFactory: Send + Sync {
    /// A fresh agent for one task, following `definition` when the call named one, working
    /// where the calling agent's tools work now (`parent`: its workspace and sandbox settings,
    /// which follow a workspace binding such as a task's git worktree) under the permission
    /// mode the calling agent is in now (`mode`: a subagent is never looser than its parent).
    fn build(
        &self,
        definition: Option<&AgentDefinition>,
        parent: &ToolContext,
        mode: PermissionMode,
    ) -> Result<Agent, SubagentError>;
}

/// Why a subagent could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SubagentError {
    /// The workspace could not be opened.
    #[error(transparent)]
    Workspace(#[from] troupe_tools::GuardError),
    /// The agent could not be built.
    #[error(transparent)]
    Build(#[from] troupe_agent::BuildError),
}

/// Input of `task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskInput {
    /// A short (3–5 word) description of the task.
    pub description: String,
    /// The whole task for the subagent: it sees nothing else of this conversation.
    pub prompt: String,
    /// Which agent definition to use; omit for a general-purpose agent.
    #[serde(default)]
    pub subagent_type: Option<String>,
}

/// `task{description, prompt, subagent_type?}`.
pub struct TaskTool {
    definitions: Arc<Definitions>,
    factory: Arc<dyn SubagentFactory>,
    usage: Arc<Mutex<Usage>>,
    /// The calling agent's permission mode, as it is at each call.
    mode: LiveMode,
    description: String,
}

impl TaskTool {
    fn new(
        definitions: Arc<Definitions>,
        factory: Arc<dyn SubagentFactory>,
        usage: Arc<Mutex<Usage>>,
        mode: LiveMode,
    ) -> TaskTool {
        let mut description = String::from(
            "Delegate a self-contained task to a subagent with a fresh conversation and its own \
             tools. It sees only your prompt, so give it everything it needs; you get back only \
             its final report. Several task calls in one response run at the same time.",
        );
        if !definitions.agents.is_empty() {
            description.push_str("\nAgent types (subagent_type):");
            for a in &definitions.agents {
                description.push_str(&format!("\n- {}: {}", a.name, a.description));
            }
        }
        TaskTool {
            definitions,
            factory,
            usage,
            mode,
            description,
        }
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        "task"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        schema_of::<TaskInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::TASK)
    }
    fn effect(&self, _input: &Value) -> Effect {
        // Delegating changes nothing by itself: every call the subagent makes is judged by its
        // own permission rules, sandbox and approver.
        Effect::Coordinate
    }
    fn concurrent(&self) -> bool {
        true
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: TaskInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let definition = match input.subagent_type.as_deref() {
            None | Some("") | Some("general-purpose") => None,
            Some(name) => match self.definitions.get(name) {
                Some(d) => Some(d),
                None => {
                    let known: Vec<&str> = self
                        .definitions
                        .agents
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect();
                    return ToolOutput::error(format!(
                        "no agent type '{name}'; the types are: general-purpose{}{}",
                        if known.is_empty() { "" } else { ", " },
                        known.join(", ")
                    ));
                }
            },
        };
        let mut agent = match self.factory.build(definition, ctx, self.mode.get()) {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(format!("could not start the subagent: {e}")),
        };
        // The subagent's own calls, one line each, as the call's progress: a person watching
        // sees them beneath the `task(…)` line while it runs.
        let progress = ctx.progress.clone();
        let outcome = agent
            .run_turn(Some(input.prompt.into()), &mut |event| {
                if let (Some(progress), Some(line)) = (&progress, progress_line(&event)) {
                    progress.output(line.as_bytes());
                }
            })
            .await;
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&agent.usage());
        match outcome {
            Ok(o) if o.end == TurnEnd::MaxTurns => ToolOutput::error(format!(
                "the subagent ({}) ran out of rounds before finishing; its last words: {}",
                input.description, o.text
            )),
            Ok(o) if o.text.trim().is_empty() => ToolOutput::error(format!(
                "the subagent ({}) finished without a report",
                input.description
            )),
            Ok(o) => ToolOutput::ok(o.text),
            Err(e) => {
                ToolOutput::error(format!("the subagent ({}) failed: {e}", input.description))
            }
        }
    }
}

/// The progress line for one of a subagent's events: each call it starts, and each call that
/// fails (with the first line of why).
fn progress_line(event: &AgentEvent<'_>) -> Option<String> {
    match event {
        AgentEvent::ToolStarted { name, input, .. } => {
            Some(format!("⏺ {name}({})\n", summarize_input(name, input)))
        }
        AgentEvent::ToolFinished {
            content,
            is_error: true,
            ..
        } => Some(format!(
            "  ✗ {}\n",
            content.lines().next().unwrap_or("(no output)")
        )),
        _ => None,
    }
}

/// Gives an agent the `task` tool; its subagents' usage adds up in [`SubagentExtension::usage`].
pub struct SubagentExtension {
    definitions: Arc<Definitions>,
    factory: Arc<dyn SubagentFactory>,
    usage: Arc<Mutex<Usage>>,
}

impl SubagentExtension {
    /// The extension over the definitions found, building subagents with `factory`.
    pub fn new(
        definitions: Arc<Definitions>,
        factory: Arc<dyn SubagentFactory>,
    ) -> SubagentExtension {
        SubagentExtension {
            definitions,
            factory,
            usage: Arc::default(),
        }
    }

    /// The names of the agent definitions the `task` tool can run.
    pub fn agent_names(&self) -> Vec<String> {
        self.definitions
            .agents
            .iter()
            .map(|a| a.name.clone())
            .collect()
    }

    /// Tokens every subagent run through this extension used, together.
    pub fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Extension for SubagentExtension {
    fn name(&self) -> &str {
        "subagents"
    }
    fn tools(&self, cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![Arc::new(TaskTool::new(
            self.definitions.clone(),
            self.factory.clone(),
            self.usage.clone(),
            cx.mode.clone(),
        ))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subagents_calls_and_failures_become_progress_lines() {
        let input = json!({"path": "src/a.rs"});
        let started = AgentEvent::ToolStarted {
            id: "c1",
            name: "read_file",
            input: &input,
        };
        assert_eq!(
            progress_line(&started).as_deref(),
            Some("⏺ read_file(src/a.rs)\n")
        );
        let failed = AgentEvent::ToolFinished {
            id: "c1",
            name: "read_file",
            content: "no such file\nmore",
            is_error: true,
        };
        assert_eq!(
            progress_line(&failed).as_deref(),
            Some("  ✗ no such file\n")
        );
        let fine = AgentEvent::ToolFinished {
            id: "c1",
            name: "read_file",
            content: "text",
            is_error: false,
        };
        assert_eq!(progress_line(&fine), None);
    }
}
