//! Where the loop asks its [`LifecycleHooks`]: the session's start and end, each prompt, each
//! tool call before and after, the end of a turn, a teammate going idle. With no lifecycle
//! hooks every step here is a check of an empty list.

use super::Agent;
use crate::lifecycle::{BeforeTool, CallDecision, SessionEndReason, ToolCall, Verdict};
use crate::permissions::{CallInfo, Decision, Grant};
use crate::transcript::TranscriptError;
use std::sync::atomic::Ordering;
use troupe_protocol::session::Prompt;
use troupe_tools::ToolOutput;

impl Agent {
    /// Runs the session-start hooks once per conversation, before its first model call; what
    /// they say for the model joins the conversation.
    pub(super) async fn start_session(&mut self) -> Result<(), TranscriptError> {
        let Some(source) = self.session.take() else {
            return Ok(());
        };
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.session_start(source).await);
        }
        self.instructions_loaded(source).await;
        self.push_context(verdict.context)
    }

    /// Runs the prompt hooks on its text: appends the prompt, its images beside its text (and
    /// what the hooks add for the model), or returns why a hook refused it.
    pub(super) async fn submit_prompt(
        &mut self,
        prompt: Prompt,
    ) -> Result<Option<String>, TranscriptError> {
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.prompt(&prompt.text).await);
        }
        if let Some(refusal) = verdict.halt.or(verdict.block) {
            return Ok(Some(refusal));
        }
        self.push(prompt.into_message(), &[])?;
        self.push_context(verdict.context)?;
        Ok(None)
    }

    /// Runs one tool call between its before- and after-hooks: a deny refuses it, a new input
    /// replaces the model's (and is judged afresh), and what the hooks say for the model is
    /// added to the result. Sets `halt` when a hook ends the turn.
    pub(super) async fn run_hooked_tool(
        &self,
        call: ToolCall<'_>,
        halt: &mut Option<String>,
    ) -> ToolOutput {
        if self.lifecycle.is_empty() {
            return self
                .run_one_tool(call.id, call.name, call.input, None)
                .await;
        }
        let before = self.before_tool(call).await;
        let input = before.input.as_ref().unwrap_or(call.input);
        let mut after = Verdict::default();
        let output = match refusal(&before) {
            // A call a hook refused never ran: there is nothing for after-hooks to see.
            Some(reason) => ToolOutput::error(reason),
            None => {
                let output = self
                    .run_one_tool(call.id, call.name, input, before.decision.as_ref())
                    .await;
                after = self.after_tool(ToolCall { input, ..call }, &output).await;
                output
            }
        };
        with_hooks(before, after, output, halt)
    }

    /// Every provider's after-hook in turn, on the call as it ran.
    pub(super) async fn after_tool(&self, call: ToolCall<'_>, output: &ToolOutput) -> Verdict {
        let mut after = Verdict::default();
        let ran_for = self.took(call.id);
        for hooks in &self.lifecycle {
            after = after.merge(hooks.after_tool_timed(call, output, ran_for).await);
        }
        after
    }

    /// What the policy says about `call`, with what a PreToolUse hook decided short of
    /// denying: the grant, the question to ask (if any), and the hook's reason when the question
    /// is the hook's. `Err` refuses the call. A hook's allow stands in for the permission mode's
    /// question only; deny and ask rules and protected files still hold.
    pub(super) fn judge<'h>(
        &self,
        call: &CallInfo<'_>,
        hook: Option<&'h CallDecision>,
    ) -> Result<(Grant, Option<String>, Option<&'h String>), String> {
        // A tool of the agent's own may have changed the mode during this round (plan mode).
        let live = self.live_mode.get();
        let decision = match live == self.policy.mode {
            true => self.policy.decide(call),
            false => {
                let mut policy = self.policy.clone();
                policy.mode = live;
                policy.decide(call)
            }
        };
        match (decision, hook) {
            (Decision::Deny { reason }, _) => Err(reason),
            (Decision::Allow(grant), Some(CallDecision::Ask(why))) => {
                Ok((grant, Some(why.clone()), Some(why)))
            }
            (Decision::Allow(grant), _) => Ok((grant, None, None)),
            (Decision::Ask { .. }, Some(CallDecision::Allow))
                if self.policy.hook_may_allow(call) =>
            {
                Ok((Grant::Hook, None, None))
            }
            (Decision::Ask { reason }, _) => Ok((Grant::Person, Some(reason), None)),
        }
    }

    /// Every provider's before-hook in turn, each seeing the input the previous one left.
    pub(super) async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        let mut merged = BeforeTool::default();
        for hooks in &self.lifecycle {
            let input = merged.input.as_ref().unwrap_or(call.input);
            let said = hooks.before_tool(ToolCall { input, ..call }).await;
            merged = merged.merge(said);
        }
        merged
    }

    /// Asks the stop hooks whether the turn may end: `Some(feedback)` keeps it going. A hook
    /// keeps a turn going once; when it asks again (`stop_hook_active` already set) the turn
    /// ends anyway, so a hook that always refuses cannot loop forever.
    pub(super) async fn keep_going(&self, active: &mut bool, last_text: &str) -> Option<String> {
        if self.lifecycle.is_empty() || self.stop.load(Ordering::SeqCst) {
            return None;
        }
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.stop(*active, last_text).await);
        }
        let feedback = verdict.block.filter(|_| verdict.halt.is_none())?;
        if *active {
            tracing::warn!(
                agent = %self.config.name,
                "a Stop hook asked to keep going again; it may once per turn, so the turn ends"
            );
            return None;
        }
        *active = true;
        Some(feedback)
    }

    /// Runs the session-end hooks (the REPL or headless run ends, or a teammate's life does).
    pub async fn end_session(&self, reason: SessionEndReason) {
        for hooks in &self.lifecycle {
            hooks.session_end(reason).await;
        }
    }

    /// Asks the teammate-idle hooks whether this teammate may go idle: `Some(feedback)` keeps it
    /// working, with the feedback as its next prompt.
    pub async fn teammate_idle(&self, team: &str) -> Option<String> {
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.teammate_idle(team).await);
        }
        verdict.block.filter(|_| verdict.halt.is_none())
    }

    /// Appends what hooks said for the model as one user message (merged on the wire with the
    /// message before it).
    pub(super) fn push_context(&mut self, context: Vec<String>) -> Result<(), TranscriptError> {
        if context.is_empty() {
            return Ok(());
        }
        self.push(
            troupe_protocol::ChatMessage::user_text(context.join("\n\n")),
            &[],
        )
    }
}

/// The result of a call that was not run because a hook ended the turn.
pub(super) fn not_run(reason: &str) -> ToolOutput {
    ToolOutput::error(format!("not run: a hook ended the turn ({reason})"))
}

/// Why the before-hooks refused the call (they ended the turn, or denied it), if they did.
pub(super) fn refusal(before: &BeforeTool) -> Option<String> {
    match (&before.halt, &before.decision) {
        (Some(reason), _) => Some(not_run(reason).content),
        (None, Some(CallDecision::Deny(reason))) => Some(reason.clone()),
        (None, _) => None,
    }
}

/// A call's output with what its hooks said for the model added; sets `halt` when one of them
/// ended the turn.
pub(super) fn with_hooks(
    before: BeforeTool,
    after: Verdict,
    mut output: ToolOutput,
    halt: &mut Option<String>,
) -> ToolOutput {
    *halt = before.halt.or(after.halt);
    for text in before
        .context
        .iter()
        .chain(&after.block)
        .chain(&after.context)
    {
        output.content.push_str("\n\n");
        output.content.push_str(text);
    }
    output
}
