//! Mailboxes: one work-queue stream per team, one subject and one durable pull consumer per
//! agent. A message stays on the server until its recipient acks it, which it does only once
//! the message is in its persisted transcript; the envelope id travels as `Nats-Msg-Id`, so a
//! re-sent envelope is dropped by the server.
//!
//! Fetching does not consume: what this process fetched and has not acked is held here and
//! returned again by the next fetch, as the file backend re-reads from its cursor. The first
//! fetch of an agent in a process takes the mailbox over: the consumer is made afresh, so
//! whatever a dead predecessor fetched and never acked is handed out again at once instead of
//! after the ack wait (the stream holds exactly the unacked messages, so nothing is lost or
//! repeated). Only the agent's lease holder fetches its mail, so no live consumer is cut off.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::reads::{read, At};
use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::message::Acker;
use async_nats::jetstream::message::PublishMessage;
use async_nats::Subject;
use futures_util::StreamExt;
use troupe_protocol::Envelope;
use troupe_store::{AckToken, Batch, CorruptLine, EventLog, MailboxStore, StoreError, Watch};

use crate::ack::Acking;
use crate::conn::Fail;
use crate::{check_agent, now_ms, NatsStore, ACK_WAIT};

/// Messages asked for per pull request.
const PULL_BATCH: usize = 1_000;

/// Publishes in flight at once when sending many.
const PUBLISH_WINDOW: usize = 512;

/// How long a fetch keeps asking for mail the stream holds but has not handed out yet (the
/// pauses double from 1 ms up to this).
const SETTLE_LIMIT: Duration = Duration::from_millis(64);

/// Longest excerpt of a corrupt message kept in reports.
const EXCERPT: usize = 200;

/// One agent's mailbox as this process consumes it.
pub(crate) struct Mailbox {
    consumer: PullConsumer,
    /// Fetched and not yet acked, by stream sequence.
    pub(crate) held: Mutex<BTreeMap<u64, Held>>,
}

/// A fetched message: what it said, and where its ack goes.
pub(crate) struct Held {
    pub(crate) parsed: Result<Envelope, CorruptLine>,
    pub(crate) reply: Option<Subject>,
}

/// Whether the stream holds a message on `subject` (`agent`'s mail) from sequence `after` on
/// (so not yet handed to this process, which holds everything before: the stream keeps only
/// unacked mail).
async fn undelivered(
    link: &crate::conn::Link,
    stream: &async_nats::jetstream::stream::Stream,
    subject: &str,
    after: u64,
    agent: &str,
) -> Result<bool, StoreError> {
    link.retry(&format!("read the mailbox of {agent}"), || async move {
        Ok(read(stream, At::NextFor(subject, after)).await?.is_some())
    })
    .await
}

/// Parses a mailbox message; what does not parse is kept as a corrupt line.
fn parse(seq: u64, payload: &[u8]) -> Result<Envelope, CorruptLine> {
    let corrupt = |error: String| CorruptLine {
        offset: seq,
        text: String::from_utf8_lossy(payload)
            .chars()
            .take(EXCERPT)
            .collect(),
        error,
    };
    // As the file backend: a message torn inside a character is named as such.
    let text = std::str::from_utf8(payload).map_err(|e| {
        corrupt(format!(
            "not valid UTF-8 at byte {} of the message (torn in the middle of a character?)",
            e.valid_up_to()
        ))
    })?;
    serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))
}

impl NatsStore {
    /// The agent's mailbox when this process has taken it over already.
    pub(crate) fn taken_over(&self, agent: &str) -> Option<Arc<Mailbox>> {
        self.inner
            .mailboxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(agent)
            .cloned()
    }

    /// The agent's mailbox in this process, taken over on first use.
    async fn mailbox(&self, agent: &str) -> Result<Arc<Mailbox>, StoreError> {
        let inner = &self.inner;
        if let Some(mb) = self.taken_over(agent) {
            return Ok(mb);
        }
        let name = inner.names.mail_consumer(agent);
        let config = pull::Config {
            durable_name: Some(name.clone()),
            filter_subject: inner.names.mail_subject(agent),
            ack_policy: AckPolicy::Explicit,
            ack_wait: ACK_WAIT,
            deliver_policy: DeliverPolicy::All,
            max_ack_pending: 100_000,
            max_deliver: -1,
            ..Default::default()
        };
        let consumer = inner
            .conn
            .retry(&format!("take over the mailbox of {agent}"), {
                let stream = inner.mail.clone();
                move || {
                    let (stream, config, name) = (stream.clone(), config.clone(), name.clone());
                    async move {
                        match stream.delete_consumer(&name).await {
                            Ok(_) => {}
                            Err(e) if e.to_string().contains("not found") => {}
                            Err(e) => return Err(Fail::Transient(e.to_string())),
                        }
                        Ok(stream.create_consumer(config).await?)
                    }
                }
            })
            .await?;
        let mb = Arc::new(Mailbox {
            consumer,
            held: Mutex::new(BTreeMap::new()),
        });
        // Only the agent's own loop fetches its mail, so no other take-over of this process
        // raced this one; should one have, the first to get here is kept.
        let mut boxes = inner
            .mailboxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(boxes.entry(agent.to_string()).or_insert(mb).clone())
    }

    /// The pulls of one fetch of `mb`, `agent`'s mailbox, as one future (the settling pauses
    /// between them are the runtime's timer's): the deliveries handed out.
    fn pulls(
        &self,
        agent: &str,
        mb: &Mailbox,
    ) -> impl std::future::Future<Output = Result<BTreeMap<u64, Held>, StoreError>> + Send + 'static
    {
        let inner = &self.inner;
        // Everything this process holds comes before `after`: a message the stream holds from
        // there on was not handed to it yet.
        let after = mb
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .next_back()
            .map_or(1, |s| s + 1);
        let (link, consumer, stream, subject, agent_name) = (
            inner.conn.link().clone(),
            mb.consumer.clone(),
            inner.mail.clone(),
            inner.names.mail_subject(agent),
            agent.to_string(),
        );
        async move {
            let agent = agent_name;
            let mut fresh: BTreeMap<u64, Held> = BTreeMap::new();
            let mut settle = Duration::from_millis(1);
            loop {
                let pulled = link
                    .retry(&format!("fetch the mailbox of {agent}"), || {
                        let consumer = consumer.clone();
                        async move {
                            let mut got = Vec::new();
                            let mut messages =
                                consumer.fetch().max_messages(PULL_BATCH).messages().await?;
                            while let Some(message) = messages.next().await {
                                match message {
                                    Ok(m) => got.push(m),
                                    // What arrived is ours until acked; the rest comes next
                                    // time.
                                    Err(_) if !got.is_empty() => break,
                                    Err(e) => return Err(Fail::Transient(e.to_string())),
                                }
                            }
                            Ok(got)
                        }
                    })
                    .await?;
                let n = pulled.len();
                for m in pulled {
                    let Ok(info) = m.info() else {
                        continue; // not a JetStream delivery: nothing to ack
                    };
                    let seq = info.stream_sequence;
                    fresh.insert(
                        seq,
                        Held {
                            parsed: parse(seq, &m.payload),
                            reply: m.message.reply.clone(),
                        },
                    );
                }
                if n == PULL_BATCH {
                    continue;
                }
                // A message the stream has just stored may not be handed out yet to a pull that
                // comes at once (a woken recipient's): when the stream holds one we were not
                // given, pull again after a moment, briefly.
                if n == 0
                    && fresh.is_empty()
                    && settle <= SETTLE_LIMIT
                    && undelivered(&link, &stream, &subject, after, &agent).await?
                {
                    tokio::time::sleep(settle).await;
                    settle *= 2;
                    continue;
                }
                return Ok(fresh);
            }
        }
    }

    /// What a fetch makes of the deliveries its pulls got: repeats of acknowledged mail left
    /// out (and acked again), the rest held until acked, corrupt ones reported; the batch is
    /// everything held.
    async fn settle_fetch(&self, agent: &str, mb: &Mailbox, fresh: BTreeMap<u64, Held>) -> Batch {
        let fresh = self.drop_repeats(agent, fresh).await;
        let (batch, newly_corrupt) = {
            let mut held = mb.held.lock().unwrap_or_else(PoisonError::into_inner);
            let mut newly_corrupt = Vec::new();
            for (seq, h) in fresh {
                if let Some(old) = held.get_mut(&seq) {
                    // Redelivered (after the ack wait, or a server restart that lost the consumer's
                    // state): we hold it already, but only the newest delivery's ack counts.
                    old.reply = h.reply;
                    continue;
                }
                if let Err(bad) = &h.parsed {
                    newly_corrupt.push(bad.clone());
                }
                held.insert(seq, h);
            }
            let mut batch = Batch::default();
            for h in held.values() {
                match &h.parsed {
                    Ok(env) => batch.messages.push(env.clone()),
                    Err(bad) => batch.corrupt.push(bad.clone()),
                }
            }
            batch.ack = held.keys().next_back().map(|s| AckToken::from_backend(*s));
            (batch, newly_corrupt)
        };
        for bad in &newly_corrupt {
            self.report_corrupt(agent, bad).await;
        }
        batch
    }

    async fn report_corrupt(&self, agent: &str, bad: &CorruptLine) {
        tracing::warn!(agent, sequence = bad.offset, error = %bad.error, "skipping corrupt mail");
        let place = format!(
            "message {} of stream {}",
            bad.offset,
            self.inner.names.mail_stream()
        );
        let event = troupe_store::record::corrupt_mail(agent, &place, bad, now_ms());
        if let Err(e) = self.record(&event).await {
            tracing::warn!(error = %e, "could not record corrupt_mail event");
        }
    }

    /// Publishes envelopes, `PUBLISH_WINDOW` in flight at a time, each acknowledged by the
    /// server before this returns; a retry re-sends them all and the server drops repeats.
    /// Then wakes each recipient once: only after the stream has stored the mail, so a woken
    /// recipient's fetch finds it (a wake from the mail subject itself could outrun the store).
    async fn publish(&self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        let inner = &self.inner;
        let mut out = Vec::with_capacity(envelopes.len());
        let mut recipients = std::collections::BTreeSet::new();
        for env in envelopes {
            check_agent(&env.to)?;
            let bytes = crate::to_bytes("mail envelope", env)?;
            out.push((inner.names.mail_subject(&env.to), env.id.clone(), bytes));
            recipients.insert(env.to.as_str());
        }
        let action = match envelopes {
            [one] => format!("send mail to {}", one.to),
            _ => format!("send {} messages", envelopes.len()),
        };
        let out = Arc::new(out);
        inner
            .conn
            .retry(&action, {
                let js = inner.conn.js.clone();
                move || {
                    let (js, out) = (js.clone(), out.clone());
                    async move {
                        for window in out.chunks(PUBLISH_WINDOW) {
                            let mut acks = Vec::with_capacity(window.len());
                            for (subject, id, bytes) in window {
                                let publish = PublishMessage::build()
                                    .payload(bytes.clone())
                                    .message_id(id);
                                acks.push(js.send_publish(subject.clone(), publish).await?);
                            }
                            for ack in acks {
                                ack.await?;
                            }
                        }
                        Ok(())
                    }
                }
            })
            .await?;
        for agent in recipients {
            self.wake(agent).await;
        }
        Ok(())
    }

    /// Publishes a wake for `agent` (core NATS, no answer awaited). A wake is a hint: one lost
    /// while the connection is down is covered by the wake every watcher gets on reconnection.
    async fn wake(&self, agent: &str) {
        let inner = &self.inner;
        crate::watch::send(&inner.conn, inner.names.wake_subject(agent), inner.cluster).await;
    }

    /// Leaves out of `fresh` the messages this process acknowledged already (handed out again
    /// by a server that lost the ack), acknowledging each again so the work queue drops it.
    async fn drop_repeats(
        &self,
        agent: &str,
        mut fresh: BTreeMap<u64, Held>,
    ) -> BTreeMap<u64, Held> {
        let repeats: Vec<u64> = {
            let all = self
                .inner
                .acked
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let Some(mine) = all.get(agent) else {
                return fresh;
            };
            fresh
                .iter()
                .filter(|(_, h)| h.parsed.as_ref().is_ok_and(|env| mine.contains(&env.id)))
                .map(|(seq, _)| *seq)
                .collect()
        };
        if repeats.is_empty() {
            return fresh;
        }
        let replies: Vec<Subject> = repeats
            .iter()
            .filter_map(|seq| fresh.remove(seq).and_then(|h| h.reply))
            .collect();
        tracing::info!(
            agent,
            count = replies.len(),
            "the server handed out acknowledged mail again; acknowledged again and left out"
        );
        let js = self.inner.conn.js.clone();
        for reply in replies {
            if let Err(e) = Acker::new(js.clone(), Some(reply)).ack().await {
                tracing::debug!(error = %e, "repeat not acknowledged again; it comes back and is left out again");
            }
        }
        fresh
    }

    async fn read_unacked(&self, agent: &str) -> Result<Batch, StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        let subject = inner.names.mail_subject(agent);
        let found = inner
            .conn
            .retry(&format!("read the mailbox of {agent}"), {
                let stream = inner.mail.clone();
                move || {
                    let (stream, subject) = (stream.clone(), subject.clone());
                    async move {
                        let mut found = Vec::new();
                        let mut next = 1;
                        while let Some(m) = read(&stream, At::NextFor(&subject, next)).await? {
                            next = m.sequence + 1;
                            found.push((m.sequence, m.payload));
                        }
                        Ok(found)
                    }
                }
            })
            .await?;
        let mut batch = Batch::default();
        for (seq, payload) in &found {
            match parse(*seq, payload) {
                Ok(env) => batch.messages.push(env),
                Err(bad) => batch.corrupt.push(bad),
            }
        }
        batch.ack = found.last().map(|(seq, _)| AckToken::from_backend(*seq));
        Ok(batch)
    }
}

#[async_trait::async_trait]
impl MailboxStore for NatsStore {
    async fn append(&self, envelope: &Envelope) -> Result<(), StoreError> {
        self.publish(std::slice::from_ref(envelope)).await
    }

    async fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        if envelopes.is_empty() {
            return Ok(());
        }
        self.publish(envelopes).await
    }

    async fn fetch(&self, agent: &str) -> Result<Batch, StoreError> {
        check_agent(agent)?;
        let mb = self.mailbox(agent).await?;
        let fresh = self.pulls(agent, &mb).await?;
        Ok(self.settle_fetch(agent, &mb, fresh).await)
    }

    async fn peek(&self, agent: &str) -> Result<Batch, StoreError> {
        self.read_unacked(agent).await
    }

    async fn ack(&self, agent: &str, token: AckToken) -> Result<(), StoreError> {
        let Some(Acking { mb, taken, confirm }) = self.ack_start(agent, token)? else {
            return Ok(());
        };
        let acked = confirm.await;
        self.ack_end(agent, &mb, taken, acked)
    }

    async fn watch(&self, agent: &str) -> Result<Box<dyn Watch>, StoreError> {
        check_agent(agent)?;
        Ok(Box::new(crate::watch::NatsWatch::start(self, agent).await?))
    }

    async fn notify(&self, agent: &str) -> Result<(), StoreError> {
        check_agent(agent)?;
        self.wake(agent).await;
        Ok(())
    }
}
