//! Waking an idle agent the moment mail arrives, across processes: the store's [`Watch`]
//! fires after each append to the agent's mailbox (and each `notify`); the agent awaits it
//! here, whatever the backend.

use std::sync::Arc;
use troupe_store::{SharedStore, StoreError, Watch};

/// An agent's wake-ups.
pub struct WakeListener {
    watch: Box<dyn Watch>,
}

/// A member's wake-ups, shared by its idle loop and its tool calls waiting on an answer (a
/// permission): they never wait at the same time, so the lock is never contended.
pub type SharedWake = Arc<tokio::sync::Mutex<WakeListener>>;

impl WakeListener {
    /// Starts watching the mailbox of `agent`. Must be called inside a tokio runtime.
    pub async fn bind(store: &SharedStore, agent: &str) -> Result<WakeListener, StoreError> {
        Ok(WakeListener {
            watch: store.watch(agent).await?,
        })
    }

    /// Waits for the next wake (wakes that came while nobody waited count).
    pub async fn wait(&mut self) {
        self.watch.changed().await;
    }
}
