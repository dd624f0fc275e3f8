//! Which of a response's calls run side by side. Calls that only read (the tool's
//! [`reads_only`](troupe_tools::Tool::reads_only)) run together, at most
//! [`MAX_READS_AT_ONCE`] at a time; a run of calls whose tool is
//! [`concurrent`](troupe_tools::Tool::concurrent) (subagents, new teammates) runs together
//! whole. Every other call is a barrier: what was started before it finishes first, and
//! nothing after it starts until it is done. So is a call that needs a permission question.
//!
//! Results stay in call order, and `ToolFinished` is reported in call order. Hooks keep their
//! order too: the before-hooks of a group run one after another in call order before its calls
//! start, the after-hooks one after another in call order once they have all finished. When an
//! after-hook ends the turn, the group's later calls are reported as not run, as they would
//! have been one at a time (they only read, so running them changed nothing).

use super::admit::Admitted;
use super::steer::{not_run, refusal, with_hooks};
use super::{Agent, AgentEvent};
use crate::lifecycle::{BeforeTool, ToolCall, Verdict};
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use serde_json::Value;
use troupe_tools::ToolOutput;

/// At most this many read-only calls run at once (Claude Code's default concurrency for
/// tool calls).
pub const MAX_READS_AT_ONCE: usize = 10;

/// One call of a response: id, tool name, input.
pub(super) type Call<'c> = (&'c str, &'c str, &'c Value);

/// The observer of the loop's events.
type Observe<'o> = dyn FnMut(AgentEvent<'_>) + Send + 'o;

/// How a call may be scheduled beside its neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// On its own: a barrier.
    Alone,
    /// Beside other calls that only read, up to the limit.
    Reads,
    /// Beside other calls of concurrent tools, however many.
    Independent,
}

/// A call of the group being gathered: its before-hooks have run, its calls have not.
struct Pending<'c> {
    index: usize,
    call: ToolCall<'c>,
    before: BeforeTool,
    work: Result<Admitted, ToolOutput>,
}

/// The outputs so far, each reported (`ToolFinished`) as soon as every earlier one is.
struct Done<'c> {
    agent: &'c Agent,
    calls: &'c [Call<'c>],
    slots: Vec<Option<ToolOutput>>,
    reported: usize,
}

impl<'c> Done<'c> {
    fn new(agent: &'c Agent, calls: &'c [Call<'c>]) -> Done<'c> {
        Done {
            agent,
            calls,
            slots: calls.iter().map(|_| None).collect(),
            reported: 0,
        }
    }

    fn put(&mut self, index: usize, output: ToolOutput, observe: &mut Observe<'_>) {
        if let Some(slot) = self.slots.get_mut(index) {
            *slot = Some(output);
        }
        while let (Some(Some(output)), Some(&(id, name, _))) =
            (self.slots.get(self.reported), self.calls.get(self.reported))
        {
            if let Some(denial) = self.agent.unasked_denial(id) {
                observe(AgentEvent::PermissionDenied(&denial));
            }
            observe(AgentEvent::ToolFinished {
                id,
                name,
                content: &output.content,
                is_error: output.is_error,
            });
            self.reported += 1;
        }
    }

    /// Every output in call order (a call never given one, which cannot happen, as an error).
    fn into_outputs(self) -> Vec<ToolOutput> {
        self.slots
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| ToolOutput::error("internal error: the call was not run"))
            })
            .collect()
    }
}

impl Agent {
    /// Runs every call of one response, side by side where they allow it, and returns their
    /// outputs in call order with why a hook ended the turn, if one did (the later calls are
    /// then not run).
    pub(super) async fn run_calls(
        &self,
        calls: &[Call<'_>],
        observe: &mut Observe<'_>,
    ) -> (Vec<ToolOutput>, Option<String>) {
        let mut done = Done::new(self, calls);
        let mut halt: Option<String> = None;
        let mut group: Vec<Pending<'_>> = Vec::new();
        let mut lane = Lane::Alone;
        for (index, &(id, name, input)) in calls.iter().enumerate() {
            observe(AgentEvent::ToolStarted { id, name, input });
            let call = ToolCall { id, name, input };
            let wanted = self.lane(name, input);
            if wanted != lane || wanted == Lane::Alone {
                self.flush(&mut group, lane, &mut halt, &mut done, observe)
                    .await;
                lane = wanted;
            }
            if let Some(reason) = &halt {
                done.put(index, not_run(reason), observe);
                continue;
            }
            if wanted == Lane::Alone {
                let output = self.run_hooked_tool(call, &mut halt).await;
                done.put(index, output, observe);
                continue;
            }
            let before = self.before_tool(call).await;
            if let Some(reason) = refusal(&before) {
                let output = with_hooks(
                    before,
                    Verdict::default(),
                    ToolOutput::error(reason),
                    &mut halt,
                );
                done.put(index, output, observe);
                continue;
            }
            let input = before.input.as_ref().unwrap_or(input);
            let work = self.admit(id, name, input, before.decision.as_ref()).await;
            let asks = matches!(&work, Ok(admitted) if admitted.needs_question());
            if !asks && self.lane(name, input) == lane {
                group.push(Pending {
                    index,
                    call,
                    before,
                    work,
                });
                continue;
            }
            // A barrier after all (a question to ask, or a hook's input that does more than
            // read): what was gathered runs and finishes first.
            self.flush(&mut group, lane, &mut halt, &mut done, observe)
                .await;
            lane = Lane::Alone;
            let output = match work {
                Ok(admitted) => match self.ask(id, admitted).await {
                    Ok(admitted) => self.execute(id, admitted).await,
                    Err(refused) => refused,
                },
                Err(refused) => refused,
            };
            let after = self.after_tool(ToolCall { input, ..call }, &output).await;
            let output = with_hooks(before, after, output, &mut halt);
            done.put(index, output, observe);
        }
        self.flush(&mut group, lane, &mut halt, &mut done, observe)
            .await;
        (done.into_outputs(), halt)
    }

    /// The lane of a call: how it may run beside its neighbours.
    fn lane(&self, name: &str, input: &Value) -> Lane {
        match self.offered.get(name) {
            Some(tool) if tool.concurrent() => Lane::Independent,
            Some(tool) if input.is_object() && tool.reads_only(input) => Lane::Reads,
            _ => Lane::Alone,
        }
    }

    /// Runs the gathered group side by side, then its after-hooks in call order. An after-hook
    /// that ends the turn leaves the group's later calls not run (and `halt` set).
    async fn flush(
        &self,
        group: &mut Vec<Pending<'_>>,
        lane: Lane,
        halt: &mut Option<String>,
        done: &mut Done<'_>,
        observe: &mut Observe<'_>,
    ) {
        if group.is_empty() {
            return;
        }
        let limit = match lane {
            Lane::Reads => MAX_READS_AT_ONCE,
            Lane::Alone | Lane::Independent => group.len(),
        };
        let mut works = Vec::with_capacity(group.len());
        let mut gathered = Vec::with_capacity(group.len());
        for pending in group.drain(..) {
            works.push((pending.call.id, pending.work));
            gathered.push((pending.index, pending.call, pending.before));
        }
        // Boxed, so that the future of the whole turn stays `Send` for every lifetime (a
        // stream of closure-made futures is not, to the compiler).
        let bodies: Vec<BoxFuture<'_, ToolOutput>> = works
            .into_iter()
            .map(|(id, work)| -> BoxFuture<'_, ToolOutput> {
                Box::pin(async move {
                    match work {
                        Ok(admitted) => self.execute(id, admitted).await,
                        Err(refused) => refused,
                    }
                })
            })
            .collect();
        let outputs: Vec<ToolOutput> = futures_util::stream::iter(bodies)
            .buffered(limit)
            .collect()
            .await;
        let mut stop: Option<String> = None;
        for ((index, call, before), output) in gathered.into_iter().zip(outputs) {
            let output = match &stop {
                Some(reason) => not_run(reason),
                None => {
                    let input = before.input.as_ref().unwrap_or(call.input);
                    let after = self.after_tool(ToolCall { input, ..call }, &output).await;
                    with_hooks(before, after, output, &mut stop)
                }
            };
            done.put(index, output, observe);
        }
        // The group's calls come before any call that ended the turn while it was gathered.
        *halt = stop.or(halt.take());
    }
}
