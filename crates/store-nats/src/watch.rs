//! Wake-ups pushed by the server: a core subscription to the agent's mail subject (every
//! message published to the mailbox reaches it as it is stored) and to its wake subject (a
//! `notify`), plus a wake after each reconnection, since whatever was published while the
//! connection was down was not seen. No polling anywhere.

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
        let (mail, wake) = (
            inner.names.mail_subject(agent),
            inner.names.wake_subject(agent),
        );
        let subs = inner
            .conn
            .retry(&format!("watch the mailbox of {agent}"), || {
                let (client, mail, wake) = (client.clone(), mail.clone(), wake.clone());
                async move {
                    let a = client.subscribe(mail).await?;
                    let b = client.subscribe(wake).await?;
                    client.flush().await?;
                    Ok((a, b))
                }
            })?;
        let wakes = Arc::new(Notify::new());
        let mut connections = inner.conn.connections.clone();
        connections.mark_unchanged();
        let notify = wakes.clone();
        let task = inner.conn.handle().spawn(async move {
            let mut merged = futures_util::stream::select(subs.0, subs.1);
            loop {
                tokio::select! {
                    message = merged.next() => {
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
