//! A teammate's (or the lead's) mailbox as the agent loop's mail source, and how mail reads
//! to a model.

use std::sync::Arc;
use troupe_agent::{InboxSource, MailBatch, MailItem};
use troupe_protocol::{Envelope, MailKind};
use troupe_store::{FileStore, MailboxStore};

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

/// The mail source of one agent: fetches from its mailbox, acknowledges after persistence.
pub struct MailboxInbox {
    store: Arc<FileStore>,
    agent: String,
}

impl MailboxInbox {
    /// The mailbox of `agent` in `store`.
    pub fn new(store: Arc<FileStore>, agent: &str) -> MailboxInbox {
        MailboxInbox {
            store,
            agent: agent.to_string(),
        }
    }
}

impl InboxSource for MailboxInbox {
    fn fetch(&self) -> Result<MailBatch, String> {
        let batch = self.store.fetch(&self.agent).map_err(|e| e.to_string())?;
        let read_anything = !batch.is_empty();
        let items = batch
            .messages
            .iter()
            .map(|env| MailItem {
                id: env.id.clone(),
                text: render_mail(env),
            })
            .collect();
        Ok(MailBatch {
            items,
            ack_token: read_anything.then_some(batch.end),
        })
    }

    fn ack(&self, batch: &MailBatch) -> Result<(), String> {
        match batch.ack_token {
            Some(end) => self.store.ack(&self.agent, end).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}
