//! What wakes an agent between prompts. The driver itself watches the agent's background
//! commands; everything else (a team's mail and board, scheduled prompts that arrive as
//! mail) comes through a [`Wakes`] the composition root gives it.

use crate::Cause;
use std::time::Duration;
use troupe_tools::background::Jobs;

/// What waits for the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Wake {
    /// Run a turn on what waits (mail, a notification), without new input.
    Turn(Cause),
    /// Run a turn with this prompt (a task claimed from the board).
    Prompt(String),
    /// The session must end (stopped or replaced from elsewhere).
    Stop,
}

impl Wake {
    /// The turn's input and cause.
    pub(crate) fn into_turn(self) -> (Option<troupe_protocol::session::Prompt>, Cause) {
        match self {
            Wake::Turn(cause) => (None, cause),
            Wake::Prompt(text) => (Some(text.into()), Cause::Follow),
            Wake::Stop => (None, Cause::Follow),
        }
    }
}

/// Whether anything waits for the agent, once checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Readiness {
    /// Something waits: act on it.
    Ready(Wake),
    /// Nothing for the agent yet, but these are still working (a session that settles
    /// waits for them).
    Busy(Vec<String>),
    /// Nothing waits and nothing works.
    Quiet,
}

/// A source of wakes: a team's mailbox and board, as the composition root wires them.
#[async_trait::async_trait]
pub trait Wakes: Send {
    /// Checks once what waits.
    async fn check(&mut self) -> Result<Readiness, String>;
    /// Waits until something may have changed, at most `limit`.
    async fn changed(&mut self, limit: Duration);
    /// Lines to tell the person now (requests that wait too long); each said once.
    async fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// No wakes: an agent alone, woken only by its background commands.
pub struct NoWakes;

#[async_trait::async_trait]
impl Wakes for NoWakes {
    async fn check(&mut self) -> Result<Readiness, String> {
        Ok(Readiness::Quiet)
    }
    async fn changed(&mut self, limit: Duration) {
        tokio::time::sleep(limit).await
    }
}

/// Waits until a background command's notification is waiting (never, without jobs).
pub(crate) async fn job_notification(jobs: Option<&Jobs>) {
    match jobs {
        Some(jobs) => jobs.wait_pending().await,
        None => std::future::pending().await,
    }
}

/// Waits until the set of background commands changes (never, without jobs).
pub(crate) async fn job_change(changes: Option<&mut tokio::sync::watch::Receiver<u64>>) {
    let changed = match changes {
        Some(changes) => changes.changed().await.is_ok(),
        None => false,
    };
    if !changed {
        std::future::pending::<()>().await;
    }
}
