//! A round's transcript sync, waited for beside the next model call. When a round
//! ends with its tool results, its lines are handed to the group commit (`run_tools`); the
//! sync then runs while the next request is on its way, so it adds nothing to the loop's time.
//! Everything that relies on the lines still waits for them: acknowledging mail and ending
//! the turn sync whatever is not yet durable ([`Agent::sync_transcript`]).

use super::{Agent, AgentError, AgentEvent};
use crate::transcript::TranscriptError;

impl Agent {
    /// Calls the model ([`Agent::call_model`]) and meanwhile waits for the last round's sync,
    /// if one was started. The call is polled first, so its request is handed to the
    /// connection before the wait blocks this thread; the wait hands this worker's other tasks
    /// (the connection's among them) to another thread while it blocks. A failed sync fails
    /// the round, as the sync at the round's end did.
    pub(super) async fn call_model_beside_sync(
        &mut self,
        observe: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<troupe_model::ModelResponse, AgentError> {
        let Some(started) = self.round_sync.take() else {
            return self.call_model(observe).await;
        };
        let (reply, outcome) =
            tokio::join!(self.call_model(observe), async move { started.wait() });
        if let Some(t) = self.transcript.as_mut() {
            t.finish_sync(outcome)?;
        }
        reply
    }

    /// Syncs whatever this agent wrote to its transcript and is not durable yet: when a
    /// repair was written (its mirror, if any, gets the lines at the next
    /// [`Agent::sync_and_mirror`]).
    pub(super) fn sync_transcript(&mut self) -> Result<(), TranscriptError> {
        // A started round sync is covered by this one.
        self.round_sync = None;
        match self.transcript.as_mut() {
            Some(t) => t.sync(),
            None => Ok(()),
        }
    }

    /// Syncs the transcript as [`Agent::sync_transcript`] and hands the synced lines to its
    /// mirror: before a mailbox is acknowledged, and when a turn ends.
    pub(super) async fn sync_and_mirror(&mut self) -> Result<(), TranscriptError> {
        self.round_sync = None;
        match self.transcript.as_mut() {
            Some(t) => t.sync_and_mirror().await,
            None => Ok(()),
        }
    }
}
