//! A teammate's (or the lead's) mailbox as the agent loop's mail source, and how mail reads
//! to a model.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use troupe_agent::{InboxError, InboxFuture, InboxSource, MailBatch, MailItem};
use troupe_protocol::{Envelope, MailKind};
use troupe_store::{AckToken, SharedStore};

/// How one envelope reads inside an `<inbox>` block.
pub fn render_mail(env: &Envelope) -> String {
    let mut head = format!(
        "<message id=\"{}\" type=\"{}\" from=\"{}\"",
        env.id,
        env.kind.as_str(),
        env.from
    );
    if let Some(rid) = &env.request_id {
        head.push_str(&format!(" request_id=\"{rid}\""));
    }
    head.push('>');
    let hint = match env.kind {
        MailKind::ShutdownRequest => {
            "\n(Answer with shutdown_response{request_id, approve, reason}.)"
        }
        MailKind::PlanApprovalRequest => {
            "\n(Review it and answer with review_plan{request_id, approve, feedback}.)"
        }
        MailKind::PermissionRequest => {
            "\n(Answer with review_permission{request_id, approve, reason}.)"
        }
        _ => "",
    };
    format!("{head}\n{}{hint}\n</message>", env.content)
}

/// The mail source of one agent: fetches from its mailbox, acknowledges after persistence. The
/// agent loop awaits it every round on an async worker; the store's async calls
/// (`fetch_async`, `ack_async`) wait without holding the worker (files on the blocking pool,
/// NATS on its client), so the worker's other agents keep running.
pub struct MailboxInbox {
    store: SharedStore,
    agent: String,
    /// The store's opaque tokens of fetched, unacked batches, by the number the agent loop
    /// carries in `MailBatch::ack_token`.
    tokens: Mutex<(u64, HashMap<u64, AckToken>)>,
}

impl MailboxInbox {
    /// The mailbox of `agent` in `store`.
    pub fn new(store: SharedStore, agent: &str) -> MailboxInbox {
        MailboxInbox {
            store,
            agent: agent.to_string(),
            tokens: Mutex::new((0, HashMap::new())),
        }
    }
}

impl InboxSource for MailboxInbox {
    fn fetch(&self) -> InboxFuture<'_, MailBatch> {
        Box::pin(async move {
            let batch = self.store.fetch(&self.agent).await.map_err(store_error)?;
            if let Some(tp) = batch
                .messages
                .iter()
                .rev()
                .find_map(|e| e.traceparent.as_deref())
            {
                troupe_protocol::trace_context::deliver(&self.agent, tp);
            }
            let items = batch
                .messages
                .iter()
                .map(|env| MailItem {
                    id: env.id.clone(),
                    text: render_mail(env),
                })
                .collect();
            let ack_token = match batch.ack {
                Some(token) => {
                    // Plain bookkeeping, consistent between statements: a panic elsewhere leaves
                    // it usable.
                    let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
                    tokens.0 += 1;
                    let key = tokens.0;
                    tokens.1.insert(key, token);
                    Some(key)
                }
                None => None,
            };
            Ok(MailBatch { items, ack_token })
        })
    }

    fn ack<'a>(&'a self, batch: &'a MailBatch) -> InboxFuture<'a, ()> {
        Box::pin(async move {
            let Some(key) = batch.ack_token else {
                return Ok(());
            };
            let token = {
                let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
                // A later batch covers everything before it: drop the older tokens with this
                // one.
                let token = tokens.1.get(&key).copied();
                tokens.1.retain(|k, _| *k > key);
                token
            };
            match token {
                Some(token) => self
                    .store
                    .ack(&self.agent, token)
                    .await
                    .map_err(store_error),
                // Already acknowledged (with a later batch): a repeated ack is harmless.
                None => Ok(()),
            }
        })
    }
}

/// The store's error, as the agent's inbox reports it.
fn store_error(e: troupe_store::StoreError) -> InboxError {
    InboxError::Store(Box::new(e))
}
