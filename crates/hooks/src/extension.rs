//! [`HooksExtension`]: the hooks installed into an agent through the agent crate's one seam,
//! [`LifecycleHooks`]. Each event's input is Claude Code's: the common fields, then the
//! event's own.

use crate::decide;
use crate::event::HookEvent;
use crate::runner::{Hooks, Occasion};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use troupe_agent::extension::Approval;
use troupe_agent::{
    BeforeTool, CompactTrigger, Compacted, Expansion, Extension, ExtensionContext, Instructions,
    InstructionsReason, LifecycleHooks, SessionEndReason, SessionSource, TaskChange, TaskInfo,
    ToolCall, TurnFailure, Verdict,
};
use troupe_protocol::claude_names;
use troupe_tools::ToolOutput;

/// Whose hooks these are: decides `Stop` or `SubagentStop`, and whether inputs name a team.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A session's own agent (the lead).
    Session,
    /// A teammate of this team.
    Teammate(String),
    /// A one-shot subagent.
    Subagent,
}

/// Installs the workspace's hooks into every agent it is registered on. Without any hook
/// configured it installs nothing, so the agent pays nothing.
#[derive(Clone)]
pub struct HooksExtension {
    hooks: Arc<Hooks>,
    permission_mode: String,
    kind: Kind,
}

impl HooksExtension {
    /// The hooks for a session's agent (the lead), whose permission mode hooks are told.
    pub fn new(hooks: Hooks, permission_mode: impl Into<String>) -> HooksExtension {
        HooksExtension {
            hooks: Arc::new(hooks),
            permission_mode: permission_mode.into(),
            kind: Kind::Session,
        }
    }

    /// The same hooks for the teammates of `team`: inputs carry `teammate_name` and `team_name`.
    pub fn for_teammates(&self, team: impl Into<String>) -> HooksExtension {
        HooksExtension {
            kind: Kind::Teammate(team.into()),
            ..self.clone()
        }
    }

    /// The same hooks for one-shot subagents: their end fires `SubagentStop`, not `Stop`.
    pub fn for_subagents(&self) -> HooksExtension {
        HooksExtension {
            kind: Kind::Subagent,
            ..self.clone()
        }
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

impl Extension for HooksExtension {
    fn name(&self) -> &str {
        "hooks"
    }

    fn lifecycle(&self, cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        if self.hooks.is_empty() {
            return None;
        }
        let session_id = cx.transcript.and_then(Path::file_stem).map_or_else(
            || cx.agent.to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let mut common = Map::new();
        common.insert("session_id".into(), session_id.into());
        common.insert(
            "transcript_path".into(),
            cx.transcript
                .map(|p| p.display().to_string())
                .unwrap_or_default()
                .into(),
        );
        common.insert("cwd".into(), cx.workspace.display().to_string().into());
        common.insert(
            "permission_mode".into(),
            self.permission_mode.clone().into(),
        );
        if let Kind::Teammate(team) = &self.kind {
            common.insert("teammate_name".into(), cx.agent.into());
            common.insert("team_name".into(), team.clone().into());
        }
        if self.kind == Kind::Subagent {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Claude Code's name for an agent of no definition.
            let agent_type = match cx.agent {
                "subagent" => "general-purpose",
                named => named,
            };
            common.insert("agent_id".into(), format!("{}-{n}", cx.agent).into());
            common.insert("agent_type".into(), agent_type.into());
        }
        Some(Arc::new(AgentHooks {
            hooks: self.hooks.clone(),
            agent: cx.agent.to_string(),
            kind: self.kind.clone(),
            common,
            dirs: cx.dirs.cloned(),
        }))
    }
}

/// The hooks of one agent.
struct AgentHooks {
    hooks: Arc<Hooks>,
    agent: String,
    kind: Kind,
    /// The fields every input carries (`session_id`, `transcript_path`, `cwd`, …).
    common: Map<String, Value>,
    /// The agent's workspace: `cwd` is where its bash calls are (a `cd` persists), read at
    /// each event.
    dirs: Option<troupe_tools::Workspace>,
}

impl AgentHooks {
    /// Fires `event` for `subject` with the common fields, `hook_event_name` and `fields`.
    async fn fire(
        &self,
        event: HookEvent,
        subject: &str,
        fields: impl FnOnce() -> Value,
    ) -> Vec<crate::run::HookRun> {
        let occasion = Occasion {
            subject,
            ..Occasion::default()
        };
        self.fire_on(event, occasion, fields).await
    }

    /// [`Self::fire`] for an [`Occasion`] (a tool call for `if`, an environment file).
    async fn fire_on(
        &self,
        event: HookEvent,
        occasion: Occasion<'_>,
        fields: impl FnOnce() -> Value,
    ) -> Vec<crate::run::HookRun> {
        if !self.hooks.has(event) {
            return Vec::new();
        }
        let input = || {
            let mut input = self.common.clone();
            if let Some(dirs) = &self.dirs {
                input.insert("cwd".into(), dirs.cwd().display().to_string().into());
            }
            input.insert("hook_event_name".into(), event.as_str().into());
            if let Value::Object(own) = fields() {
                input.extend(own);
            }
            Value::Object(input)
        };
        self.hooks
            .fire_on(&self.agent, event, occasion, input)
            .await
    }

    /// The occasion of a tool event: matched on the tool's name, `if` on the call.
    fn tool_occasion<'c>(call: &'c ToolCall<'c>) -> Occasion<'c> {
        Occasion {
            subject: call.name,
            call: Some((call.name, call.input)),
            env_file: false,
        }
    }

    /// Fires `event` and reads what its runs decide.
    async fn verdict(
        &self,
        event: HookEvent,
        subject: &str,
        fields: impl FnOnce() -> Value,
    ) -> Verdict {
        decide::verdict(event, &self.fire(event, subject, fields).await)
    }

    /// The tool's input as hooks see it: troupe's fields and Claude Code's beside them
    /// (`file_path`, absolute, for a file tool's `path`).
    fn tool_input(&self, call: &ToolCall<'_>) -> Value {
        let mut input = call.input.clone();
        let claude = claude_names::input_to_claude(call.name, call.input, self.hooks.project_dir());
        if let (Some(map), Value::Object(claude)) = (input.as_object_mut(), claude) {
            map.extend(claude);
        }
        input
    }
}

/// The tool's name as hooks see it: Claude Code's where it has one (`Bash`), else troupe's.
fn tool_name(name: &str) -> &str {
    claude_names::shown_name(name)
}

#[async_trait]
impl LifecycleHooks for AgentHooks {
    async fn session_start(&self, source: SessionSource) -> Verdict {
        // A subagent is part of its parent's session, as in Claude Code: its start is
        // SubagentStart, matched on its agent type.
        if self.kind == Kind::Subagent {
            let agent_type = self
                .common
                .get("agent_type")
                .and_then(Value::as_str)
                .unwrap_or("general-purpose")
                .to_string();
            return self
                .verdict(HookEvent::SubagentStart, &agent_type, || json!({}))
                .await;
        }
        let occasion = Occasion {
            subject: source.as_str(),
            call: None,
            env_file: true,
        };
        let runs = self
            .fire_on(
                HookEvent::SessionStart,
                occasion,
                || json!({"source": source.as_str()}),
            )
            .await;
        decide::verdict(HookEvent::SessionStart, &runs)
    }

    async fn prompt(&self, prompt: &str) -> Verdict {
        // A subagent's task comes from its parent, not from the user.
        if self.kind == Kind::Subagent {
            return Verdict::default();
        }
        self.verdict(
            HookEvent::UserPromptSubmit,
            "",
            || json!({"prompt": prompt}),
        )
        .await
    }

    async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        let runs = self
            .fire_on(HookEvent::PreToolUse, Self::tool_occasion(&call), || {
                json!({"tool_name": tool_name(call.name), "tool_input": self.tool_input(&call), "tool_use_id": call.id})
            })
            .await;
        match runs.is_empty() {
            true => BeforeTool::default(),
            false => decide::before_tool(
                &runs,
                call.name,
                &self.tool_input(&call),
                self.hooks.project_dir(),
            ),
        }
    }

    async fn after_tool(&self, call: ToolCall<'_>, output: &ToolOutput) -> Verdict {
        self.after_tool_timed(call, output, None).await
    }

    async fn after_tool_timed(
        &self,
        call: ToolCall<'_>,
        output: &ToolOutput,
        ran_for: Option<Duration>,
    ) -> Verdict {
        // As in Claude Code: PostToolUse after a call that succeeded, PostToolUseFailure (with
        // the error) after one that failed.
        let (event, outcome) = match output.is_error {
            false => (
                HookEvent::PostToolUse,
                json!({"tool_response": {"content": output.content, "is_error": false}}),
            ),
            true => (
                HookEvent::PostToolUseFailure,
                json!({"error": output.content, "is_interrupt": false}),
            ),
        };
        let runs = self
            .fire_on(event, Self::tool_occasion(&call), || {
                let mut fields = json!({
                    "tool_name": tool_name(call.name),
                    "tool_input": self.tool_input(&call),
                    "tool_use_id": call.id,
                });
                if let (Some(map), Value::Object(own)) = (fields.as_object_mut(), outcome) {
                    map.extend(own);
                    if let Some(took) = ran_for {
                        map.insert("duration_ms".into(), (took.as_millis() as u64).into());
                    }
                }
                fields
            })
            .await;
        decide::verdict(event, &runs)
    }

    async fn stop(&self, active: bool, last_text: &str) -> Verdict {
        let event = match self.kind {
            Kind::Subagent => HookEvent::SubagentStop,
            Kind::Session | Kind::Teammate(_) => HookEvent::Stop,
        };
        self.verdict(
            event,
            "",
            || json!({"stop_hook_active": active, "last_assistant_message": last_text}),
        )
        .await
    }

    async fn pre_compact(&self, trigger: CompactTrigger, instructions: &str) -> Verdict {
        self.verdict(
            HookEvent::PreCompact,
            trigger.as_str(),
            || json!({"trigger": trigger.as_str(), "custom_instructions": instructions}),
        )
        .await
    }

    async fn session_end(&self, reason: SessionEndReason) {
        self.fire(
            HookEvent::SessionEnd,
            reason.as_str(),
            || json!({"reason": reason.as_str()}),
        )
        .await;
    }

    async fn teammate_idle(&self, team: &str) -> Verdict {
        self.verdict(
            HookEvent::TeammateIdle,
            "",
            || json!({"teammate_name": self.agent, "team_name": team}),
        )
        .await
    }

    async fn task_change(&self, task: TaskInfo<'_>) -> Verdict {
        let event = match task.change {
            TaskChange::Created => HookEvent::TaskCreated,
            TaskChange::Completed => HookEvent::TaskCompleted,
        };
        self.verdict(event, "", || {
            json!({
                "task_id": task.id,
                "task_subject": task.subject,
                "task_description": task.description,
                "teammate_name": self.agent,
                "team_name": task.team,
            })
        })
        .await
    }

    async fn after_round(&self, calls: &[(ToolCall<'_>, &ToolOutput)]) -> Verdict {
        self.verdict(HookEvent::PostToolBatch, "", || {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(call, output)| {
                    json!({
                        "tool_name": tool_name(call.name),
                        "tool_input": self.tool_input(call),
                        "tool_use_id": call.id,
                        "tool_response": {"content": output.content, "is_error": output.is_error},
                    })
                })
                .collect();
            json!({ "tool_calls": calls })
        })
        .await
    }

    async fn permission_request(&self, call: ToolCall<'_>, _reason: &str) -> Option<Approval> {
        let runs = self
            .fire_on(
                HookEvent::PermissionRequest,
                Self::tool_occasion(&call),
                || json!({"tool_name": tool_name(call.name), "tool_input": self.tool_input(&call)}),
            )
            .await;
        decide::permission(
            &runs,
            call.name,
            &self.tool_input(&call),
            self.hooks.project_dir(),
        )
    }

    async fn awaiting_person(&self, call: ToolCall<'_>, _reason: &str) {
        let message = format!(
            "troupe needs your permission to use {}",
            tool_name(call.name)
        );
        self.fire(HookEvent::Notification, "permission_prompt", || {
            json!({
                "message": message,
                "title": "Permission needed",
                "notification_type": "permission_prompt",
            })
        })
        .await;
    }

    async fn turn_failed(&self, failure: TurnFailure<'_>) {
        self.fire(HookEvent::StopFailure, failure.kind, || {
            json!({
                "error_type": failure.kind,
                "error": failure.code,
                "error_message": failure.message,
            })
        })
        .await;
    }

    async fn post_compact(&self, done: Compacted<'_>) {
        self.fire(HookEvent::PostCompact, done.trigger.as_str(), || {
            json!({
                "trigger": done.trigger.as_str(),
                "compact_summary": done.summary,
                "tokens_before": done.tokens_before,
                "tokens_after": done.tokens_after,
            })
        })
        .await;
    }

    async fn prompt_expanded(&self, expansion: Expansion<'_>) -> Verdict {
        self.verdict(HookEvent::UserPromptExpansion, expansion.command, || {
            json!({
                "expansion_type": "slash_command",
                "command_name": expansion.command,
                "command_args": expansion.args,
                "command_source": expansion.source,
                "prompt": expansion.prompt,
            })
        })
        .await
    }

    async fn instructions_loaded(&self, loaded: Instructions<'_>) {
        // One firing per file, as Claude Code does; an imported file is loaded by `include`.
        for file in loaded.files {
            let reason = match (loaded.reason, &file.imported_by) {
                (InstructionsReason::SessionStart, Some(_)) => "include",
                (reason, _) => reason.as_str(),
            };
            self.fire(HookEvent::InstructionsLoaded, reason, || {
                let mut fields = json!({
                    "file_path": file.path.display().to_string(),
                    "memory_type": file.memory_type,
                    "load_reason": reason,
                });
                if let (Some(map), Some(parent)) = (fields.as_object_mut(), &file.imported_by) {
                    map.insert(
                        "parent_file_path".into(),
                        parent.display().to_string().into(),
                    );
                }
                fields
            })
            .await;
        }
    }
}
