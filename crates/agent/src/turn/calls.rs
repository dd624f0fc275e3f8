//! Running the tool calls of one model reply (see `batch` for which run side by side and
//! `admit` for gates, permission rules, the approver and the sandbox) and remembering the calls
//! that were refused.

use super::{Agent, AgentError, AgentEvent};
use crate::lifecycle::ToolCall;
use crate::permissions::DenialSource;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

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
    pub(super) fn unasked_denial(&self, id: &str) -> Option<PermissionDenial> {
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

    pub(super) fn record_denial(
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

    /// Runs every tool call of one assistant message (side by side where they allow it, see
    /// `batch`) and appends one result per call, in call order. Returns why a hook stopped the
    /// turn, if one did (the round's later calls are then not run).
    pub(super) async fn run_tools(
        &mut self,
        message: &ChatMessage,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        let calls: Vec<_> = message.tool_uses().collect();
        let (outputs, halt) = self.run_calls(&calls, observe).await;
        let round = match self.lifecycle.is_empty() {
            true => crate::lifecycle::Verdict::default(),
            false => {
                let finished: Vec<_> = calls
                    .iter()
                    .zip(&outputs)
                    .map(|(&(id, name, input), output)| (ToolCall { id, name, input }, output))
                    .collect();
                self.after_round(&finished).await
            }
        };
        let results = calls
            .iter()
            .zip(outputs)
            .map(|(&(id, _, _), output)| ContentBlock::ToolResult {
                tool_use_id: id.to_string(),
                content: output.content,
                is_error: output.is_error,
                images: output.images,
            })
            .collect();
        let results = ChatMessage {
            role: Role::User,
            content: results,
        };
        self.push(results.clone(), &[])?;
        self.push_context(round.block.into_iter().chain(round.context).collect())?;
        // The round ends with its results: one sync covers the reply and the results. It runs
        // beside the next model call (see `beside`).
        if let Some(t) = self.transcript.as_mut() {
            self.round_sync = t.start_sync()?;
            if t.is_mirrored() {
                t.sync_and_mirror().await?;
            }
        }
        observe(AgentEvent::ToolResults(&results));
        Ok(halt.or(round.halt))
    }
}
