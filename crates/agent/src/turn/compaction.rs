//! Where the loop runs the compaction pipeline ([`crate::compact`]): its cheap steps before
//! every model call, the summary when one is due or asked for, the reactive summary after a
//! prompt-too-long error, and `/context`.

use super::{Agent, AgentError, AgentEvent};
use crate::compact::{summary, CompactReason, Compaction, ContextReport, Due};
use crate::extension::ExtensionContext;
use crate::lifecycle::{SessionSource, Verdict};
use crate::transcript::CompactMark;
use troupe_model::{ModelError, ModelRequest, StreamEvent};
use troupe_protocol::{ChatMessage, Role};

/// What of a model call's stream the person sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// Its text and thinking as they arrive (the agent's own calls).
    Streamed,
    /// Only its retries (a summary).
    RetriesOnly,
}

impl Agent {
    /// The pipeline's cheap steps (output budget, micro-compaction), then the summary when the
    /// context passed its threshold or a compaction was asked for.
    pub(super) async fn compact_if_needed(
        &mut self,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<(), AgentError> {
        if !self.compactor.meter.is_measured() {
            let fixed = self.fixed_tokens();
            self.compactor.meter.set_fixed(fixed);
        }
        match self.compactor.before_call(&mut self.messages) {
            Due::Nothing => Ok(()),
            Due::Summary(reason, focus) => {
                self.summarize(reason, &focus, observe).await?;
                Ok(())
            }
        }
    }

    /// Compacts the conversation now (`/compact [focus]`): `None` when there is too little to
    /// compact.
    pub async fn compact(
        &mut self,
        focus: &str,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Option<Compaction>, AgentError> {
        self.repair()?;
        let fixed = self.fixed_tokens();
        self.compactor.meter.set_fixed(fixed);
        self.summarize(CompactReason::Requested, focus, observe)
            .await
    }

    /// Where the context stands (`/context`).
    pub fn context(&self) -> ContextReport {
        let mut report = self.compactor.report(&self.messages);
        if report.fixed == 0 {
            report.fixed = self.fixed_tokens_now();
            if !report.measured {
                report.used += report.fixed;
            }
        }
        report
    }

    /// Estimated tokens of what every request carries besides the conversation, from the
    /// specs the next call sends (found or built once for the process, see `specs`).
    fn fixed_tokens(&mut self) -> u64 {
        let tools = self
            .specs
            .bytes(&self.offered, || super::wire::tool_specs_of(&self.offered));
        (self.system.len() as u64).div_ceil(crate::compact::meter::BYTES_PER_TOKEN)
            + tools.div_ceil(crate::compact::meter::BYTES_PER_TOKEN)
    }

    /// [`Agent::fixed_tokens`] without the specs' cache, for a reader that cannot change it.
    fn fixed_tokens_now(&self) -> u64 {
        let tools: u64 = self
            .offered
            .iter()
            .map(|t| {
                (t.name().len() + t.description().len()) as u64
                    + crate::compact::meter::schema_bytes(&super::wire::input_schema_of(t.as_ref()))
            })
            .sum();
        (self.system.len() as u64).div_ceil(crate::compact::meter::BYTES_PER_TOKEN)
            + tools.div_ceil(crate::compact::meter::BYTES_PER_TOKEN)
    }

    /// The summary step: the model summarizes everything before the recent rounds, and the
    /// conversation becomes that summary (with what extensions re-state) plus those rounds.
    /// The transcript gains a compaction boundary and the compacted conversation after it.
    /// `None` when no cut leaves something to summarize.
    pub(super) async fn summarize(
        &mut self,
        reason: CompactReason,
        focus: &str,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Option<Compaction>, AgentError> {
        let tokens_before = self.compactor.meter.used(&self.messages);
        let keep = match reason {
            CompactReason::Threshold => self.compactor.config.keep_at_summary(),
            // Asked for, or refused as too long: summarize all but the round in progress.
            CompactReason::Requested | CompactReason::PromptTooLong => 0,
        };
        let Some(cut) = summary::split_point(&self.messages, keep) else {
            return Ok(None);
        };
        let trigger = reason.trigger();
        let mut verdict = Verdict::default();
        for hooks in &self.lifecycle {
            verdict = verdict.merge(hooks.pre_compact(trigger, focus).await);
        }
        let mut instructions = focus.trim().to_string();
        for text in verdict.context {
            instructions.push('\n');
            instructions.push_str(&text);
        }
        let todos = crate::todo::checklist(&self.todo.items());
        let text = self
            .summary_text(cut, &todos, &instructions, observe)
            .await?;
        let restated = self.restated().await;
        let history = self.history_note();
        let head = summary::head_message(&text, &restated, &todos, &history);
        let mut compacted = Vec::with_capacity(self.messages.len() - cut + 1);
        compacted.push(head);
        compacted.extend(self.messages.drain(cut..));
        let summarized = self.messages.len();
        self.messages = compacted;
        self.compactor.replaced();
        let fixed = self.fixed_tokens();
        self.compactor.meter.set_fixed(fixed);
        let compaction = Compaction {
            reason,
            tokens_before,
            tokens_after: self.compactor.meter.used(&self.messages),
            summarized,
            kept: self.messages.len() - 1,
        };
        if let Some(t) = self.transcript.as_mut() {
            let mark = CompactMark {
                reason: reason.as_str().to_string(),
                tokens_before: compaction.tokens_before,
                tokens_after: compaction.tokens_after,
                todos: self.todo.items(),
            };
            t.append_compaction(mark, &self.messages)?;
        }
        self.compactor.compactions += 1;
        self.compactor.last = Some(compaction.clone());
        self.session = Some(SessionSource::Compact);
        tracing::info!(
            agent = %self.config.name,
            reason = reason.as_str(),
            before = compaction.tokens_before,
            after = compaction.tokens_after,
            "compacted the conversation"
        );
        let done = crate::lifecycle::Compacted {
            trigger,
            summary: &text,
            tokens_before: compaction.tokens_before,
            tokens_after: compaction.tokens_after,
        };
        for hooks in &self.lifecycle {
            hooks.post_compact(done).await;
        }
        for watcher in &self.watchers {
            watcher.compacted(&self.config.name, &compaction);
        }
        observe(AgentEvent::Compacted(&compaction));
        Ok(Some(compaction))
    }

    /// Asks the model for the summary of `messages[..cut]`. A summarizing call refused as too
    /// long is tried once more with a quarter of the text.
    async fn summary_text(
        &mut self,
        cut: usize,
        todos: &str,
        instructions: &str,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<String, AgentError> {
        let mut max_bytes = self.compactor.config.summary_input_bytes();
        let mut shrunk = false;
        loop {
            let rendered = summary::render(&self.messages[..cut], max_bytes);
            let request = ModelRequest {
                model: self.config.model.clone(),
                system: summary::SUMMARY_SYSTEM.into(),
                messages: vec![ChatMessage::user_text(summary::request_text(
                    &rendered,
                    todos,
                    instructions,
                ))],
                tools: Vec::new().into(),
                max_tokens: self
                    .config
                    .max_tokens
                    .min(crate::compact::SUMMARY_MAX_TOKENS),
                agent: self.config.name.clone(),
                cache: None,
            };
            let result = self
                .stream_counted(&request, Shown::RetriesOnly, observe)
                .await;
            match result {
                Ok(reply) => {
                    let message = ChatMessage {
                        role: Role::Assistant,
                        content: reply.content,
                    };
                    return Ok(message.text());
                }
                Err(e) if e.is_prompt_too_long() && !shrunk => {
                    shrunk = true;
                    max_bytes /= 4;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// One model call whose time and tokens count as the agent's (and reach its usage sinks).
    pub(super) async fn stream_counted(
        &mut self,
        request: &ModelRequest,
        shown: Shown,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<troupe_model::ModelResponse, ModelError> {
        let started = std::time::Instant::now();
        let mut forward = |event: StreamEvent| match &event {
            // A summary streams no text to the person: only its retries are shown.
            StreamEvent::TextDelta(_) | StreamEvent::ThinkingDelta(_)
                if shown == Shown::RetriesOnly => {}
            StreamEvent::TextDelta(t) => observe(AgentEvent::TextDelta(t)),
            StreamEvent::ThinkingDelta(t) => observe(AgentEvent::ThinkingDelta(t)),
            StreamEvent::ToolUseStart { .. } => {}
            StreamEvent::Notice(text) => observe(AgentEvent::Notice(text)),
            StreamEvent::Retrying {
                attempt,
                wait_ms,
                reason,
            } => observe(AgentEvent::Retrying {
                attempt: *attempt,
                wait_ms: *wait_ms,
                reason,
            }),
        };
        let result = self.model.stream(request, &mut forward).await;
        self.api_ms += started.elapsed().as_millis() as u64;
        let reply = result?;
        self.usage.add(&reply.usage);
        self.usage_by_model.add(&self.config.model, &reply.usage);
        if !self.watchers.is_empty() {
            let usage = troupe_protocol::AgentUsage {
                model: self.config.model.clone(),
                usage: self.usage,
                by_model: self.usage_by_model.clone(),
            };
            for watcher in &self.watchers {
                watcher.usage(&self.config.name, &usage);
            }
        }
        Ok(reply)
    }

    /// What the extensions re-state after a compaction (identity, team, task).
    async fn restated(&self) -> Vec<String> {
        let path = self.transcript.as_ref().map(|t| t.path().to_path_buf());
        let cx = ExtensionContext {
            agent: &self.config.name,
            workspace: &self.home,
            stop: &self.stop,
            mode: &self.live_mode,
            dirs: None,
            transcript: path.as_deref(),
        };
        let pending: Vec<_> = self
            .extensions
            .iter()
            .filter_map(|e| e.restate(&cx))
            .collect();
        let mut restated = Vec::with_capacity(pending.len());
        for text in pending {
            restated.push(text.await);
        }
        restated
    }

    /// Where the full history is, for the compacted conversation's first message.
    fn history_note(&self) -> String {
        let mut parts = Vec::new();
        if let Some(dir) = self.compactor.spill.dir() {
            parts.push(format!(
                "Tool results kept aside are in {}.",
                self.compactor.spill.shown(dir)
            ));
        }
        if let Some(t) = self.transcript.as_ref() {
            parts.push(format!(
                "The whole conversation before this point is in the transcript {}.",
                self.compactor.spill.shown(t.path())
            ));
        }
        parts.join(" ")
    }
}

/// The words of [`AgentError::ContextFull`].
pub(super) fn context_full(compacted: bool, tokens: u64, window: u64, message: &str) -> String {
    let what = if compacted {
        "the prompt is still too long for the model's context window after compacting the conversation"
    } else {
        "the prompt is too long for the model's context window and there is nothing left to compact"
    };
    format!(
        "{what} (about {tokens} tokens; window {window}): {message}. Start a fresh conversation (/clear), or give the real window with --context-window or the contextWindow setting"
    )
}
