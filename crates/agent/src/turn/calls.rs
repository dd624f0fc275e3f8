//! Running the tool calls of one model reply — gates, permission rules, the approver, the
//! sandbox — and remembering the calls that were refused.

use super::{steer, Agent, AgentError, AgentEvent};
use crate::confine::{question, sandbox_for, unconfinable};
use crate::extension::{Approval, Question};
use crate::lifecycle::{CallDecision, ToolCall};
use crate::permissions::{CallInfo, DenialSource};
use troupe_protocol::{ChatMessage, ContentBlock, Role};
use troupe_tools::{Sandbox, ToolOutput};

/// A tool call that was not allowed to run (Claude Code's `permission_denials` entries).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PermissionDenial {
    /// The tool.
    pub tool_name: String,
    /// The call's id.
    pub tool_use_id: String,
    /// The call's input.
    pub tool_input: serde_json::Value,
    /// What refused it when nobody was asked (a deny rule, the mode, a run without anybody to
    /// ask); `None` when somebody said no, or a hook did.
    #[serde(skip)]
    pub source: Option<DenialSource>,
    /// What the model was told.
    #[serde(skip)]
    pub message: String,
}

impl Agent {
    /// The calls refused so far (by a deny rule, the mode, or the approver), oldest first.
    pub fn permission_denials(&self) -> Vec<PermissionDenial> {
        self.denials
            .lock()
            .map(|d| d.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// The refusal of call `id` when nobody was asked about it, for
    /// [`AgentEvent::PermissionDenied`].
    fn unasked_denial(&self, id: &str) -> Option<PermissionDenial> {
        let denials = self
            .denials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        denials
            .iter()
            .rev()
            .find(|d| d.tool_use_id == id && d.source.is_some())
            .cloned()
    }

    fn record_denial(
        &self,
        (id, name, input): (&str, &str, &serde_json::Value),
        source: Option<DenialSource>,
        message: &str,
    ) {
        let denial = PermissionDenial {
            tool_name: name.to_string(),
            tool_use_id: id.to_string(),
            tool_input: input.clone(),
            source,
            message: message.to_string(),
        };
        match self.denials.lock() {
            Ok(mut d) => d.push(denial),
            Err(poisoned) => poisoned.into_inner().push(denial),
        }
    }

    /// Runs every tool call of one assistant message and appends one result per call. Returns
    /// why a hook stopped the turn, if one did (the round's later calls are then not run).
    pub(super) async fn run_tools(
        &mut self,
        message: &ChatMessage,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        let mut results = Vec::new();
        let mut halt: Option<String> = None;
        let calls: Vec<_> = message.tool_uses().collect();
        let together = calls.len() > 1
            && calls
                .iter()
                .all(|(_, name, _)| self.offered.get(name).is_some_and(|t| t.concurrent()));
        if together {
            // Independent calls (subagents): run at once, results kept in call order.
            for (id, name, input) in &calls {
                observe(AgentEvent::ToolStarted { id, name, input });
            }
            let this = &*self;
            let outputs =
                futures_util::future::join_all(calls.iter().map(|&(id, name, input)| async move {
                    let mut halted = None;
                    let call = ToolCall { id, name, input };
                    let output = this.run_hooked_tool(call, &mut halted).await;
                    (output, halted)
                }))
                .await;
            for (&(id, name, _), (output, halted)) in calls.iter().zip(outputs) {
                halt = halt.or(halted);
                if let Some(denial) = self.unasked_denial(id) {
                    observe(AgentEvent::PermissionDenied(&denial));
                }
                observe(AgentEvent::ToolFinished {
                    id,
                    name,
                    content: &output.content,
                    is_error: output.is_error,
                });
                results.push(ContentBlock::ToolResult {
                    tool_use_id: id.to_string(),
                    content: output.content,
                    is_error: output.is_error,
                    images: output.images,
                });
            }
        }
        for (id, name, input) in calls.into_iter().filter(|_| !together) {
            observe(AgentEvent::ToolStarted { id, name, input });
            let output = match &halt {
                Some(reason) => steer::not_run(reason),
                None => {
                    self.run_hooked_tool(ToolCall { id, name, input }, &mut halt)
                        .await
                }
            };
            if let Some(denial) = self.unasked_denial(id) {
                observe(AgentEvent::PermissionDenied(&denial));
            }
            observe(AgentEvent::ToolFinished {
                id,
                name,
                content: &output.content,
                is_error: output.is_error,
            });
            results.push(ContentBlock::ToolResult {
                tool_use_id: id.to_string(),
                content: output.content,
                is_error: output.is_error,
                images: output.images,
            });
        }
        let results = ChatMessage {
            role: Role::User,
            content: results,
        };
        self.push(results.clone(), &[])?;
        // The round ends with its results: one sync covers the reply and the results.
        self.sync_transcript()?;
        observe(AgentEvent::ToolResults(&results));
        Ok(halt)
    }

    /// Runs one call through gates, permissions and the approver. `hook` is what a PreToolUse
    /// hook decided short of denying: its allow stands in for the permission mode's question
    /// only; its ask adds a question.
    pub(super) async fn run_one_tool(
        &self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
        hook: Option<&CallDecision>,
    ) -> ToolOutput {
        let Some(tool) = self.offered.get(name) else {
            let names: Vec<&str> = self.offered.iter().map(|t| t.name()).collect();
            return ToolOutput::error(format!(
                "unknown tool '{name}'. Available tools: {}",
                names.join(", ")
            ));
        };
        if !input.is_object() {
            return ToolOutput::error(format!(
                "invalid input for {name}: expected a JSON object, got {input}"
            ));
        }
        let effect = tool.effect(input);
        for gate in &self.gates {
            if let Some(refusal) = gate.check(name, effect, input) {
                return ToolOutput::error(refusal);
            }
        }
        let gate_confines = self
            .gates
            .iter()
            .any(|gate| gate.confines(name, effect, input));
        let call = CallInfo {
            tool: name,
            effect,
            input,
            workspace_root: self.ctx.workspace.root(),
        };
        let (grant, asked, hook_asks) = match self.judge(&call, hook) {
            Ok(judged) => judged,
            Err(reason) => {
                let source = self.policy.denial_source(&call);
                self.record_denial((id, name, input), source, &reason);
                return ToolOutput::error(reason);
            }
        };
        let mut sandbox = sandbox_for(grant, gate_confines, &self.ctx.sandbox_config);
        let unconfinable = match tool.runs_programs() {
            true => unconfinable(name, input, sandbox, &self.ctx.sandbox_config),
            false => None,
        };
        let cannot_confine = unconfinable.is_some();
        let mut replaced: Option<serde_json::Value> = None;
        let question = question(asked, unconfinable, || match hook_asks {
            Some(why) => format!("{why}; a headless run cannot ask"),
            None => self.policy.headless_refusal(&call),
        });
        if let Some((reason, how_to_allow)) = question {
            let question = Question {
                agent: &self.config.name,
                tool: name,
                input,
                reason: &reason,
                how_to_allow: &how_to_allow,
                request_id: None,
            };
            match self.approver.approve(question).await {
                Approval::Deny(why) => {
                    let source =
                        (!self.approver.asks_someone()).then_some(DenialSource::NoApprover);
                    self.record_denial((id, name, input), source, &why);
                    return ToolOutput::error(why);
                }
                Approval::AllowWith(updated) if &updated != input => {
                    if let Err(why) = self.recheck(name, &updated) {
                        self.record_denial((id, name, &updated), None, &why);
                        return ToolOutput::error(why);
                    }
                    replaced = Some(updated);
                }
                Approval::Allow | Approval::AllowWith(_) => {}
            }
            if cannot_confine {
                // The person said yes knowing it cannot be confined here.
                sandbox = Sandbox::Unsandboxed;
            }
        }
        let mut ctx = self.ctx.clone();
        ctx.sandbox = sandbox;
        ctx.progress = self
            .progress
            .as_ref()
            .map(|sink| troupe_tools::Progress::new(id, sink.clone()));
        tool.call(replaced.unwrap_or_else(|| input.clone()), &ctx)
            .await
    }

    /// An input the approver rewrote, judged again: the gates and the deny rules (its question
    /// was answered, so an ask stands as allowed).
    fn recheck(&self, name: &str, input: &serde_json::Value) -> Result<(), String> {
        if !input.is_object() {
            return Err(format!(
                "the permission answer's input for {name} is not a JSON object: {input}"
            ));
        }
        let Some(tool) = self.offered.get(name) else {
            return Err(format!("unknown tool '{name}'"));
        };
        let effect = tool.effect(input);
        for gate in &self.gates {
            if let Some(refusal) = gate.check(name, effect, input) {
                return Err(refusal);
            }
        }
        let call = CallInfo {
            tool: name,
            effect,
            input,
            workspace_root: self.ctx.workspace.root(),
        };
        self.judge(&call, None).map(|_| ())
    }
}
