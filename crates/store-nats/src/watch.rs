//! Wake-ups pushed by the server: a core subscription to the agent's wake subject, which every
//! sender publishes to once the stream has stored its mail (and `notify` without mail), plus a
//! wake after each reconnection, since whatever was published while the connection was down was
//! not seen. No polling anywhere.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use troupe_store::{StoreError, Watch};

use crate::NatsStore;

/// A watch on one agent's mailbox.
pub(crate) struct NatsWatch {
    wakes: Arc<Notify>,
    task: JoinHandle<()>,
}

impl NatsWatch {
    /// Subscribes (and makes sure the server has the subscriptions before returning, so no
    /// message published after this call is missed).
    pub(crate) fn start(store: &NatsStore, agent: &str) -> Result<NatsWatch, StoreError> {
        let inner = &store.inner;
        let client = inner.conn.client.clone();
        let wake = inner.names.wake_subject(agent);
        let mut sub = inner
            .conn
            .retry(&format!("watch the mailbox of {agent}"), move || {
                let (client, wake) = (client.clone(), wake.clone());
                async move {
                    let sub = client.subscribe(wake).await?;
                    client.flush().await?;
                    Ok(sub)
                }
            })?;
        let wakes = Arc::new(Notify::new());
        let mut connections = inner.conn.connections.clone();
        connections.mark_unchanged();
        let notify = wakes.clone();
        let task = inner.conn.handle().spawn(async move {
            loop {
                tokio::select! {
                    message = sub.next() => {
                        if message.is_none() {
                            break; // the client is gone: so is the store
                        }
                    }
                    changed = connections.changed() => {
                        if changed.is_err() {
                            break;
                        }
                    }
                }
                // One stored permit: wakes that come while nobody waits coalesce into one.
                notify.notify_one();
            }
        });
        Ok(NatsWatch { wakes, task })
    }
}

impl Drop for NatsWatch {
    fn drop(&mut self) {
        // Dropping the subscriptions with the task unsubscribes them.
        self.task.abort();
    }
}

#[async_trait]
impl Watch for NatsWatch {
    async fn changed(&mut self) {
        self.wakes.notified().await;
    }
}
