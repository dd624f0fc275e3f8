//! The team's ordered writer for the small, frequent writes agents make while they work — what
//! a member is doing, its running token total, tool-call and compaction events: one thread per
//! process takes them from a queue and writes them to the store in the order they were made,
//! so an agent never waits on the store for them, and no older value lands after a newer one
//! (writes a thread pool ran side by side could). A burst is coalesced: of several values of
//! one member's doing or usage queued together, only the newest is written; events are all
//! written, in order.

use std::collections::BTreeMap;
use std::sync::mpsc;

use troupe_protocol::{AgentUsage, Event};
use troupe_store::SharedStore;

/// One queued write.
enum Write {
    Doing(String, Option<String>),
    Usage(String, AgentUsage),
    Event(Event),
    /// Answered once everything queued before it is written.
    Flush(mpsc::Sender<()>),
}

/// The queue's sending end; the writer thread ends when it is dropped.
#[derive(Debug)]
pub struct StoreWriter {
    tx: Option<mpsc::Sender<Write>>,
}

impl StoreWriter {
    /// Starts the writer thread for `store`. Without a thread (the OS refused one) writes are
    /// made on the caller's thread instead.
    pub fn start(store: SharedStore) -> StoreWriter {
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("troupe-store-writer".into())
            .spawn(move || {
                // The writer's own small runtime: it awaits the store's calls one batch at a
                // time, on this thread, and holds no worker of the team's runtime.
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(run(&store, &rx)),
                    Err(e) => tracing::warn!(error = %e, "no runtime for the store writer"),
                }
            });
        match spawned {
            Ok(_) => StoreWriter { tx: Some(tx) },
            Err(e) => {
                tracing::warn!(error = %e, "no store writer thread; presence is written inline");
                StoreWriter { tx: None }
            }
        }
    }

    /// Queues `name`'s doing (`None`: doing nothing).
    pub fn doing(&self, store: &SharedStore, name: &str, doing: Option<String>) {
        self.send(store, Write::Doing(name.to_string(), doing));
    }

    /// Queues `agent`'s running token total.
    pub fn usage(&self, store: &SharedStore, agent: &str, usage: AgentUsage) {
        self.send(store, Write::Usage(agent.to_string(), usage));
    }

    /// Queues an event for the log.
    pub fn event(&self, store: &SharedStore, event: Event) {
        self.send(store, Write::Event(event));
    }

    /// Waits until everything queued so far is written (this thread blocks).
    pub fn flush(&self) {
        let Some(tx) = &self.tx else { return };
        let (done, wait) = mpsc::channel();
        if tx.send(Write::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }

    fn send(&self, store: &SharedStore, write: Write) {
        let unsent = match &self.tx {
            Some(tx) => match tx.send(write) {
                Ok(()) => return,
                Err(mpsc::SendError(w)) => w,
            },
            None => write,
        };
        // No writer thread: written from a task of the caller's runtime, if there is one.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let store = store.clone();
                handle.spawn(async move { apply(&store, vec![unsent]).await });
            }
            Err(_) => tracing::warn!("no store writer and no runtime; a presence write is lost"),
        }
    }
}

/// The writer thread: takes what is queued, coalesces it, writes it.
async fn run(store: &SharedStore, rx: &mpsc::Receiver<Write>) {
    // Waiting for the next write blocks this thread, which is the writer's alone.
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        apply(store, batch).await;
    }
}

/// Writes a batch: its events in order, then only the newest doing and usage of each agent.
async fn apply(store: &SharedStore, batch: Vec<Write>) {
    let mut doing: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut usage: BTreeMap<String, AgentUsage> = BTreeMap::new();
    let mut events = Vec::new();
    let mut flushes = Vec::new();
    for write in batch {
        match write {
            Write::Doing(name, d) => {
                doing.insert(name, d);
            }
            Write::Usage(agent, u) => {
                usage.insert(agent, u);
            }
            Write::Event(event) => events.push(event),
            Write::Flush(done) => flushes.push(done),
        }
    }
    // The batch's events as one append with one sync: written one by one, each paid a sync
    // of its own, since nothing else writes the log from this thread meanwhile.
    if let Err(e) = store.record_many(&events).await {
        tracing::warn!(error = %e, events = events.len(), "could not record events");
    }
    for (name, d) in doing {
        if let Err(e) = store.set_doing(&name, d.as_deref()).await {
            tracing::debug!(error = %e, member = %name, "could not publish what a member is doing");
        }
    }
    for (agent, u) in usage {
        if let Err(e) = store.set_usage(&agent, &u).await {
            tracing::debug!(error = %e, %agent, "could not publish an agent's token usage");
        }
    }
    for done in flushes {
        let _ = done.send(());
    }
}
