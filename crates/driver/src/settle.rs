//! Settling: after a prompt's turn, the turns that what waits asks for, until nothing keeps
//! the session busy. The shape of `-p` and the SDK's session, whose answer to a prompt is
//! the team's work, not the lead's first turn.

use crate::wakes::{job_change, Readiness, Wake};
use crate::{Cause, Driver, Event, Failure, Frontend, Op, Progress, Sink};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use troupe_agent::TurnEnd;

impl Driver<'_> {
    /// What waits for the agent now: what the wakes say first (a stop among it), then a
    /// finished background command's notification; running background commands count as busy.
    pub(crate) async fn readiness(&mut self) -> Result<Readiness, String> {
        let jobs = self.agent.background().cloned();
        let mut state = self.wakes.check().await?;
        if matches!(state, Readiness::Ready(_)) {
            return Ok(state);
        }
        if jobs.as_ref().is_some_and(|j| j.has_pending()) {
            return Ok(Readiness::Ready(Wake::Turn(Cause::Background)));
        }
        let running: Vec<String> = jobs
            .iter()
            .flat_map(|j| j.running())
            .map(|j| {
                format!(
                    "{}'s background command {} ({})",
                    self.policy.who, j.id, j.command
                )
            })
            .collect();
        if !running.is_empty() {
            state = match state {
                Readiness::Quiet => Readiness::Busy(running),
                Readiness::Busy(mut busy) => {
                    busy.extend(running);
                    Readiness::Busy(busy)
                }
                ready => ready,
            };
        }
        Ok(state)
    }

    /// Runs the turns what waits asks for after `progress`'s first turn, until nothing is
    /// busy; fails when that takes longer than `limit`. Operations taken meanwhile are
    /// handled as during a turn.
    pub(crate) async fn settle(
        &mut self,
        mut progress: Progress,
        limit: Duration,
        front: &mut dyn Frontend,
        sink: &mut Sink<'_>,
    ) -> Result<Progress, Failure> {
        let deadline = Instant::now() + limit;
        let stop = self.agent.stop_flag();
        let mut job_changes = self.agent.background().map(|j| j.subscribe());
        // A turn that hit its limit wakes for nothing more; nor does a stopped agent.
        while progress.end != TurnEnd::MaxTurns && !stop.load(Ordering::SeqCst) {
            let busy = match self.readiness().await.map_err(Failure::Wakes)? {
                Readiness::Ready(Wake::Stop) | Readiness::Quiet => break,
                Readiness::Ready(wake) => {
                    let (input, cause) = wake.into_turn();
                    let turn = self.turn(input, cause, front, sink).await?;
                    progress.model_calls += turn.model_calls;
                    if turn.end != TurnEnd::Nothing {
                        progress.text = turn.text;
                        progress.end = turn.end;
                    }
                    continue;
                }
                Readiness::Busy(busy) if busy.is_empty() => break,
                Readiness::Busy(busy) => busy,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(Failure::Wakes(format!(
                    "the team did not settle within --team-timeout {}s; still working: {}",
                    limit.as_secs(),
                    busy.join(", ")
                )));
            }
            tokio::select! {
                () = self.wakes.changed(deadline - now) => {}
                () = job_change(job_changes.as_mut()) => {}
                op = front.next_op(Some(Cause::Mail)), if !self.closed => match op {
                    None => self.closed = true,
                    Some(Op::Interrupt) => return Err(Failure::Interrupted),
                    Some(Op::Shutdown) => {
                        stop.store(true, Ordering::SeqCst);
                        self.closed = true;
                    }
                    Some(op) => self.queued.push_back(op),
                },
            }
            for note in self.wakes.notes().await {
                sink(Event::Note(&note));
            }
        }
        Ok(progress)
    }
}
