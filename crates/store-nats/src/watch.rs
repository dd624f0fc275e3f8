//! Wake-ups pushed by the server: a core subscription to the agent's wake subject, which every
//! sender publishes to once the stream has stored its mail (and `notify` without mail), plus a
//! wake after each reconnection, since whatever was published while the connection was down was
//! not seen. No polling anywhere.

use std::sync::Arc;
use std::time::Duration;

use async_nats::RequestErrorKind;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use troupe_store::{StoreError, Watch};

use crate::conn::{Conn, Fail};
use crate::NatsStore;

/// A watch on one agent's mailbox.
pub(crate) struct NatsWatch {
    wakes: Arc<Notify>,
    task: JoinHandle<()>,
}

impl NatsWatch {
    /// Subscribes (and makes sure the server has the subscriptions before returning, so no
    /// message published after this call is missed).
    pub(crate) async fn start(store: &NatsStore, agent: &str) -> Result<NatsWatch, StoreError> {
        let inner = &store.inner;
        let client = inner.conn.client.clone();
        let wake = inner.names.wake_subject(agent);
        let mut sub = inner
            .conn
            .retry(&format!("watch the mailbox of {agent}"), move || {
                let (client, wake) = (client.clone(), wake.clone());
                async move {
                    let sub = client.subscribe(wake.clone()).await?;
                    // `flush` only writes the subscription out. A request is answered once the
                    // server has read it, and so the subscription before it: from then on it
                    // gets what anyone publishes to `wake` (through this server).
                    match client.request(format!("{wake}.probe"), Bytes::new()).await {
                        Ok(_) => {}
                        Err(e) if e.kind() == RequestErrorKind::NoResponders => {}
                        Err(e) => return Err(Fail::Transient(e.to_string())),
                    }
                    Ok(sub)
                }
            })
            .await?;
        let wakes = Arc::new(Notify::new());
        let mut connections = inner.conn.connections.clone();
        connections.mark_unchanged();
        let notify = wakes.clone();
        let replier = inner.conn.client.clone();
        let task = inner.conn.handle().spawn(async move {
            loop {
                tokio::select! {
                    message = sub.next() => {
                        let Some(message) = message else {
                            break; // the client is gone: so is the store
                        };
                        // A sender in a cluster asks whether its wake reached a watcher.
                        if let Some(reply) = message.reply {
                            let _ = replier.publish(reply, Bytes::new()).await;
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

/// How long a sender in a cluster keeps trying to reach a watcher that no server knows of yet.
const CLUSTER_WAKE_WINDOW: Duration = Duration::from_millis(500);

/// Sends a wake to `subject`, without waiting for it to arrive.
///
/// On one server a plain publish: the server has every subscription it will route to. In a
/// cluster a new subscription reaches the other servers a moment after its own has it, and a
/// wake published on one of them in that moment would be dropped. So a sender in a cluster
/// asks: its wake is a request, which a watcher answers. While the server it published to
/// knows of no watcher ("no responders"), it sends again, with pauses, for
/// [`CLUSTER_WAKE_WINDOW`]; nobody watching at all costs those few sends, in the background.
pub(crate) async fn send(conn: &Conn, subject: String, cluster: bool) {
    let client = conn.client.clone();
    if !cluster {
        if let Err(e) = client.publish(subject, Bytes::new()).await {
            tracing::debug!(error = %e, "wake not sent");
            return;
        }
        // Written out before the sender goes on: the client lives on the sender's runtime, and
        // a sender that ends its run or blocks its thread right after sending mail would
        // otherwise leave the wake in the client's buffer.
        if let Err(e) = client.flush().await {
            tracing::debug!(error = %e, "wake not flushed");
        }
        return;
    }
    conn.handle().spawn(async move {
        let deadline = tokio::time::Instant::now() + CLUSTER_WAKE_WINDOW;
        let mut pause = Duration::from_millis(2);
        loop {
            let asked = client.request(subject.clone(), Bytes::new());
            match tokio::time::timeout(Duration::from_secs(1), asked).await {
                Ok(Err(e)) if e.kind() == RequestErrorKind::NoResponders => {}
                Ok(Ok(_)) => return,
                // A watcher got it and has not answered (or the server is away: the watcher
                // wakes on reconnecting anyway).
                Ok(Err(_)) | Err(_) => return,
            }
            if tokio::time::Instant::now() + pause > deadline {
                return; // nobody watches
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    });
}
