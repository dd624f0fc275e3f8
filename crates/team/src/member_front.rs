//! A teammate as a front end of the session driver: its wakes (mail, a task it may claim, a
//! stop from elsewhere) and what it does between turns (status, usage, its report to the
//! lead, the TeammateIdle hooks).

use crate::error::MemberError;
use crate::member::{roster_background, Ending, MAX_IDLE_REFUSALS};
use crate::shared::TeamShared;
use crate::spec::{MemberSpec, LEAD};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use troupe_agent::{Agent, TurnEnd};
use troupe_driver::{Cause, Failure, Flow, Frontend, Op, Progress, Readiness, Wake, Wakes};
use troupe_protocol::{AgentStatus, MailKind};

/// How the member's session ended, or why it failed; filled in by whoever learns it.
#[derive(Default)]
pub(crate) struct Outcome {
    pub(crate) ending: Option<Ending>,
    pub(crate) error: Option<MemberError>,
}

/// Shared between the member's wakes and its front end.
pub(crate) type SharedOutcome = Arc<Mutex<Outcome>>;

fn settle(outcome: &SharedOutcome, ending: Ending) {
    let mut o = outcome.lock().unwrap_or_else(PoisonError::into_inner);
    o.ending.get_or_insert(ending);
}

/// What wakes an idle member.
pub(crate) struct MemberWakes<'a> {
    pub(crate) shared: &'a Arc<TeamShared>,
    pub(crate) spec: &'a MemberSpec,
    pub(crate) cancel: &'a CancellationToken,
    /// The member's wake socket, shared with its permission questions' wait (held only
    /// while idle).
    pub(crate) wake: &'a crate::wake::SharedWake,
    pub(crate) stop_flag: Arc<AtomicBool>,
    pub(crate) outcome: SharedOutcome,
}

#[async_trait::async_trait]
impl Wakes for MemberWakes<'_> {
    async fn check(&mut self) -> Result<Readiness, String> {
        let (name, epoch) = (self.spec.name.as_str(), self.spec.epoch);
        if self.cancel.is_cancelled() {
            // Process exit while idle: nothing to record, the member stays resumable.
            settle(&self.outcome, Ending::ProcessExit);
            return Ok(Readiness::Ready(Wake::Stop));
        }
        // Force-stopped (possibly from another terminal) or replaced while idle.
        let ended = crate::protocols::incarnation_ended(&*self.shared.store, name, epoch).await;
        if self.stop_flag.load(Ordering::SeqCst) || ended {
            settle(&self.outcome, Ending::Stopped);
            return Ok(Readiness::Ready(Wake::Stop));
        }
        match self.shared.store.peek(name).await {
            Ok(batch) if !batch.is_empty() => return Ok(Readiness::Ready(Wake::Turn(Cause::Mail))),
            Ok(_) => {}
            Err(e) => {
                // A store that cannot be read fails the member, as a failed turn does.
                let mut o = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
                o.error.get_or_insert(MemberError::from(e));
                return Ok(Readiness::Ready(Wake::Stop));
            }
        }
        // No mail: take a ready task, claimed atomically for it. A board change wakes this
        // wait the way mail does.
        if self.spec.auto_claim {
            match crate::board::claim_for_idle(&*self.shared.store, name, epoch).await {
                Ok(Some(task)) => {
                    return Ok(Readiness::Ready(Wake::Prompt(crate::board::work_prompt(
                        &task,
                    ))))
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(member = name, error = %e, "could not look for ready tasks")
                }
            }
        }
        Ok(Readiness::Quiet)
    }

    async fn changed(&mut self, limit: Duration) {
        let mut wake = self.wake.lock().await;
        tokio::select! {
            () = wake.wait() => {}
            () = self.cancel.cancelled() => {}
            () = tokio::time::sleep(limit) => {}
        }
    }
}

/// What a member does between its turns.
pub(crate) struct MemberFront<'a> {
    pub(crate) shared: &'a Arc<TeamShared>,
    pub(crate) spec: &'a MemberSpec,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) outcome: SharedOutcome,
    pub(crate) idle_refusals: u32,
}

#[async_trait::async_trait]
impl Frontend for MemberFront<'_> {
    async fn next_op(&mut self, _turn: Option<Cause>) -> Option<Op> {
        // Process exit: idle, the session ends; working, the turn ends at its round boundary.
        self.cancel.cancelled().await;
        Some(Op::Shutdown)
    }

    async fn apply(&mut self, _agent: &mut Agent, _op: Op) -> Flow {
        Flow::Continue
    }

    async fn before_turn(&mut self, agent: &mut Agent, _cause: Cause) {
        let (name, epoch) = (&self.spec.name, self.spec.epoch);
        self.shared
            .set_status(name, epoch, AgentStatus::Working, "")
            .await;
        if self.cancel.is_cancelled() {
            agent.stop_flag().store(true, Ordering::SeqCst);
        }
    }

    async fn finished(&mut self, agent: &mut Agent, result: Result<Progress, Failure>) -> Flow {
        let progress = match result {
            Ok(progress) => progress,
            Err(failure) => {
                let error = match failure {
                    Failure::Agent(e) => MemberError::from(e),
                    other => MemberError::Panicked(other.to_string()),
                };
                let mut o = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
                o.error.get_or_insert(error);
                return Flow::End;
            }
        };
        if let Err(e) = self.report(agent, &progress).await {
            let mut o = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
            o.error.get_or_insert(e);
            return Flow::End;
        }
        if self.cancel.is_cancelled() {
            settle(&self.outcome, Ending::ProcessExit);
            return Flow::End;
        }
        if progress.end == TurnEnd::Stopped {
            settle(&self.outcome, Ending::Shutdown);
            return Flow::End;
        }
        if let Some(feedback) = self.idle_hooks(agent).await {
            return Flow::Prompt(feedback.into());
        }
        let (name, epoch) = (&self.spec.name, self.spec.epoch);
        self.shared
            .set_status(name, epoch, AgentStatus::Idle, "")
            .await;
        Flow::Continue
    }
}

impl MemberFront<'_> {
    /// The work phase's usage and background commands on the roster, and its report to the
    /// lead (a phase that found nothing to do reports nothing).
    async fn report(&self, agent: &Agent, progress: &Progress) -> Result<(), MemberError> {
        let name = &self.spec.name;
        let s: &TeamShared = self.shared;
        // Before it goes idle: the settle rule must see what still runs.
        let background = agent
            .background()
            .map(roster_background)
            .unwrap_or_default();
        let report = match progress.end {
            TurnEnd::Nothing => None,
            _ if progress.text.trim().is_empty() => Some(format!(
                "({name} finished a work phase without a final message)"
            )),
            _ => Some(progress.text.clone()),
        };
        s.record_phase(
            name,
            agent.usage(),
            agent.usage_by_model(),
            background,
            report.as_deref(),
        )
        .await;
        let Some(report) = report else {
            return Ok(());
        };
        s.send(troupe_protocol::Envelope::new(
            MailKind::TaskResult,
            name,
            LEAD,
            report,
            troupe_agent::transcript::now_ms(),
        ))
        .await?;
        Ok(())
    }

    /// Asks the TeammateIdle hooks whether the member may go idle: `Some(feedback)` is its
    /// next prompt instead, at most [`MAX_IDLE_REFUSALS`] times in a row.
    async fn idle_hooks(&mut self, agent: &Agent) -> Option<String> {
        let feedback = agent.teammate_idle(&self.shared.config.team).await;
        match feedback {
            Some(_) if self.idle_refusals < MAX_IDLE_REFUSALS => {
                self.idle_refusals += 1;
                feedback
            }
            Some(_) => {
                tracing::warn!(teammate = %agent.config().name, "a TeammateIdle hook kept refusing; the teammate goes idle anyway");
                self.idle_refusals = 0;
                None
            }
            None => {
                self.idle_refusals = 0;
                None
            }
        }
    }
}
