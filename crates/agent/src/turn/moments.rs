//! Where the loop tells its [`LifecycleHooks`](crate::LifecycleHooks) of the moments beyond a
//! call and a prompt: a round's results all in, a permission question about to be asked, a turn
//! failed on the model's error, the instruction files in context, a slash command expanded.

use super::{Agent, AgentError};
use crate::extension::Approval;
use crate::lifecycle::{
    Expansion, Instructions, InstructionsReason, SessionSource, ToolCall, TurnFailure, Verdict,
};
use std::time::Duration;
use troupe_model::ModelError;
use troupe_tools::ToolOutput;

impl Agent {
    /// Remembers how long call `id` ran, for its after-hooks.
    pub(super) fn ran(&self, id: &str, took: Duration) {
        if self.lifecycle.is_empty() {
            return;
        }
        let mut ran = self
            .ran_for
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ran.insert(id.to_string(), took);
    }

    /// How long call `id` ran (`None`: it never ran), forgotten once asked.
    pub(super) fn took(&self, id: &str) -> Option<Duration> {
        let mut ran = self
            .ran_for
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ran.remove(id)
    }

    /// Tells the hooks that every call of the round has its result: what they say for the model
    /// comes after the results; `halt` ends the turn.
    pub(super) async fn after_round(&self, calls: &[(ToolCall<'_>, &ToolOutput)]) -> Verdict {
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.after_round(calls).await);
        }
        verdict
    }

    /// What the hooks answer to a permission question about `call` in place of a person, if
    /// one answers; when none does and someone will be asked, they are told the agent waits.
    pub(super) async fn hook_approval(&self, call: ToolCall<'_>, reason: &str) -> Option<Approval> {
        let mut answer: Option<Approval> = None;
        for hooks in &self.lifecycle {
            match (hooks.permission_request(call, reason).await, &answer) {
                // A no from any hook stands.
                (Some(deny @ Approval::Deny(_)), _) => answer = Some(deny),
                (Some(yes), None) => answer = Some(yes),
                (_, _) => {}
            }
        }
        if answer.is_none() && self.approver.asks_someone() {
            for hooks in &self.lifecycle {
                hooks.awaiting_person(call, reason).await;
            }
        }
        answer
    }

    /// Tells the hooks the turn failed on `error` (a model or API error; others are not theirs).
    pub(super) async fn turn_failed(&self, error: &AgentError) {
        if self.lifecycle.is_empty() {
            return;
        }
        let (kind, code) = match error {
            AgentError::Model(e) => failure_kind(e),
            AgentError::ContextFull { .. } => ("invalid_request", String::new()),
            AgentError::Transcript(_) | AgentError::Inbox(_) => return,
        };
        let message = error.to_string();
        let failure = TurnFailure {
            kind,
            code: &code,
            message: &message,
        };
        for hooks in &self.lifecycle {
            hooks.turn_failed(failure).await;
        }
    }

    /// Tells the hooks which instruction files are in context as the conversation (re)starts.
    pub(super) async fn instructions_loaded(&self, source: SessionSource) {
        if self.lifecycle.is_empty() || self.instructions.is_empty() {
            return;
        }
        let reason = match source {
            SessionSource::Compact => InstructionsReason::Compact,
            SessionSource::Startup | SessionSource::Resume | SessionSource::Clear => {
                InstructionsReason::SessionStart
            }
        };
        let loaded = Instructions {
            reason,
            files: &self.instructions,
        };
        for hooks in &self.lifecycle {
            hooks.instructions_loaded(loaded).await;
        }
    }

    /// Asks the hooks about a slash command's expansion before its prompt is submitted: `block`
    /// refuses it, `context` goes after the prompt.
    pub async fn prompt_expanded(&self, expansion: Expansion<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.prompt_expanded(expansion).await);
        }
        verdict
    }
}

/// Claude Code's kind of a failed model call, and its short code (the HTTP status).
fn failure_kind(error: &ModelError) -> (&'static str, String) {
    let by_status = |status: u16| match status {
        429 => "rate_limit",
        401 | 403 => "authentication_failed",
        402 => "billing_error",
        404 => "model_not_found",
        400..=499 => "invalid_request",
        500..=599 => "server_error",
        _ => "unknown",
    };
    match error {
        ModelError::Http { status, .. } => (by_status(*status), status.to_string()),
        ModelError::Auth { status, .. } => ("authentication_failed", status.to_string()),
        ModelError::PromptTooLong { .. } => ("invalid_request", String::new()),
        ModelError::RetriesExhausted { last_error, .. } => {
            let status = last_error
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse::<u16>().ok())
                .find(|n| (400..600).contains(n));
            match status {
                Some(status) => (by_status(status), status.to_string()),
                None => ("server_error", String::new()),
            }
        }
        _ => ("unknown", String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_errors_get_claude_codes_kinds() {
        let http = |status| ModelError::Http {
            url: "u".into(),
            status,
            message: "m".into(),
        };
        assert_eq!(failure_kind(&http(429)), ("rate_limit", "429".into()));
        assert_eq!(failure_kind(&http(529)).0, "server_error");
        assert_eq!(failure_kind(&http(400)).0, "invalid_request");
        let exhausted = ModelError::RetriesExhausted {
            url: "u".into(),
            attempts: 3,
            last_error: "HTTP 429 Too Many Requests".into(),
        };
        assert_eq!(failure_kind(&exhausted), ("rate_limit", "429".into()));
        let refused = ModelError::ConnectionRefused { url: "u".into() };
        assert_eq!(failure_kind(&refused).0, "unknown");
    }
}
