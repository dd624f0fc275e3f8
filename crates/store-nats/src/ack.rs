//! Acknowledging mail on the server: every ack of a batch confirmed (an ack sent just before a
//! stream leader dies is lost even when a later one is confirmed), the outcome settled against
//! what this process holds ([`crate::mailbox`]). A server that no longer knows the deliveries
//! (a restart lost the consumer's recent state) answers none of their acks: the first such
//! delivery ends the wait, the rest are acked unconfirmed and the mailbox is taken over anew.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use async_nats::jetstream::message::Acker;
use async_nats::Subject;
use futures_util::StreamExt;
use troupe_store::{AckToken, StoreError};

use crate::conn::{Fail, ATTEMPT_LIMIT, REQUEST_TIMEOUT};
use crate::mailbox::{Held, Mailbox};
use crate::{check_agent, NatsStore};

/// Acks awaiting their confirmation at once.
const ACK_WINDOW: usize = 256;

/// What an ack achieved.
pub(crate) enum Acked {
    /// The server took it (it confirmed, or the messages are gone from the work queue).
    Confirmed,
    /// The server does not know these deliveries any more: they will be handed out again.
    Stale,
}

/// An ack under way ([`NatsStore::ack_start`]): the deliveries it took, and its confirmation.
pub(crate) struct Acking {
    pub(crate) mb: Arc<Mailbox>,
    pub(crate) taken: BTreeMap<u64, Held>,
    pub(crate) confirm:
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Acked, StoreError>> + Send>>,
}

/// Acks one delivery and waits for the server to confirm it. Without a confirmation the
/// server may have taken it anyway (the work queue dropped the message), or no longer know
/// this delivery (a restart lost the consumer's recent state, and it will hand the message out
/// again): the stream says which.
async fn confirm_ack(
    js: async_nats::jetstream::Context,
    stream: async_nats::jetstream::stream::Stream,
    seq: u64,
    reply: Subject,
) -> Result<Acked, Fail> {
    match Acker::new(js, Some(reply)).double_ack().await {
        Ok(()) => Ok(Acked::Confirmed),
        Err(e) => match crate::reads::read(&stream, crate::reads::At::Seq(seq)).await {
            Ok(None) => Ok(Acked::Confirmed),
            Ok(Some(_)) => Ok(Acked::Stale),
            Err(_) => Err(Fail::Transient(e.to_string())),
        },
    }
}

/// How long an ack waits for a replicated stream to drop what it acked (see
/// [`crate::reads::until_gone`]).
const DROP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl NatsStore {
    /// The start of an ack of `agent`'s mail up to `token`: what it takes from the held
    /// deliveries, and the confirmation as one future (`None`: nothing to ack). [`NatsStore::ack_end`] settles the outcome.
    pub(crate) fn ack_start(
        &self,
        agent: &str,
        token: AckToken,
    ) -> Result<Option<Acking>, StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        let Some(mb) = self.taken_over(agent) else {
            return Ok(None); // nothing fetched here: a token from elsewhere acks nothing
        };
        let upto = token.backend_position();
        let taken: BTreeMap<u64, Held> = {
            let mut held = mb.held.lock().unwrap_or_else(PoisonError::into_inner);
            let rest = held.split_off(&upto.saturating_add(1));
            std::mem::replace(&mut *held, rest)
        };
        if taken.is_empty() {
            return Ok(None); // already acked: a repeated ack is harmless
        }
        let replies: Arc<Vec<(u64, Subject)>> = Arc::new(
            taken
                .iter()
                .filter_map(|(seq, h)| h.reply.clone().map(|r| (*seq, r)))
                .collect(),
        );
        // A server that lost the consumer's state answers none of these acks: every one waits
        // out its request timeout, window after window, so an attempt may take that long.
        let waves = u32::try_from(replies.len().div_ceil(ACK_WINDOW)).unwrap_or(u32::MAX);
        let attempt = ATTEMPT_LIMIT.max(REQUEST_TIMEOUT.saturating_mul(waves + 1));
        let (link, action) = (
            inner.conn.link().clone(),
            format!("ack the mail of {agent}"),
        );
        let make = {
            let (js, stream) = (inner.conn.js.clone(), inner.mail.clone());
            move || {
                let (js, replies, stream) = (js.clone(), replies.clone(), stream.clone());
                async move {
                    // Every ack is confirmed, not only the last: acks sent just before a stream
                    // leader dies are lost even when a later one, answered by the next leader, is
                    // confirmed.
                    let mut outcomes = futures_util::stream::iter(replies.iter().cloned())
                        .map(|(seq, reply)| confirm_ack(js.clone(), stream.clone(), seq, reply))
                        .buffer_unordered(ACK_WINDOW);
                    while let Some(outcome) = outcomes.next().await {
                        // One delivery the server no longer knows means it lost the
                        // consumer's recent state (and may answer none of these): the
                        // mailbox is taken over anew, so the rest are acked without
                        // waiting for answers. What the server still hands out comes back
                        // and is acked again as a repeat.
                        if let Acked::Stale = outcome? {
                            drop(outcomes);
                            for (_, reply) in replies.iter() {
                                let acker = Acker::new(js.clone(), Some(reply.clone()));
                                let _ = acker.ack().await;
                            }
                            return Ok(Acked::Stale);
                        }
                    }
                    if let Some((last, _)) = replies.last() {
                        crate::reads::until_gone(&stream, *last, DROP_WAIT).await;
                    }
                    Ok(Acked::Confirmed)
                }
            }
        };
        Ok(Some(Acking {
            mb,
            taken,
            confirm: Box::pin(async move { link.retry_within(&action, attempt, make).await }),
        }))
    }

    /// Settles an ack's outcome: acked ids remembered (a repeat is left out), a stale batch
    /// makes the mailbox be taken over anew, a failed one is held again.
    pub(crate) fn ack_end(
        &self,
        agent: &str,
        mb: &Mailbox,
        taken: BTreeMap<u64, Held>,
        acked: Result<Acked, StoreError>,
    ) -> Result<(), StoreError> {
        let inner = &self.inner;
        if acked.is_ok() {
            let mut all = inner.acked.lock().unwrap_or_else(PoisonError::into_inner);
            let mine = all.entry(agent.to_string()).or_default();
            for h in taken.values() {
                if let Ok(env) = &h.parsed {
                    mine.insert(&env.id);
                }
            }
        }
        match acked {
            Ok(Acked::Confirmed) => Ok(()),
            Ok(Acked::Stale) => {
                // Take the mailbox over anew on the next fetch: the server hands out everything
                // still unacked, with acks it knows; the consumer skips what it has by id.
                tracing::warn!(
                    agent,
                    "the server no longer knew these deliveries; the mailbox is taken over again"
                );
                inner
                    .mailboxes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(agent);
                Ok(())
            }
            Err(e) => {
                // Still ours: held again, so the next fetch returns them and a later ack retries.
                let mut held = mb.held.lock().unwrap_or_else(PoisonError::into_inner);
                held.extend(taken);
                Err(e)
            }
        }
    }
}
