//! Background commands as the loop sees them: every agent gets its own
//! [`Jobs`](troupe_tools::background::Jobs), the tools over them (`bash_output`,
//! `kill_background`; `bash` starts them), and their notifications delivered like mail —
//! persisted into the conversation before the next model call, then acknowledged.

use crate::extension::{
    Extension, ExtensionContext, InboxError, InboxFuture, InboxSource, MailBatch, MailItem,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_tools::background::{BashOutputTool, Jobs, KillBackgroundTool};
use troupe_tools::DynTool;

/// The tools over background commands, offered only beside `bash` (which starts them).
pub const TOOL_NAMES: [&str; 2] = ["bash_output", "kill_background"];

/// Where an agent's background logs go: beside its transcript, in the session's folder
/// (`.troupe/sessions/<id>/background/` for the lead), or a private temporary folder for an
/// agent without a transcript.
pub fn log_dir(transcript: Option<&Path>) -> PathBuf {
    match transcript {
        Some(path) => path.with_extension("").join("background"),
        None => std::env::temp_dir().join(format!("troupe-background-{}", uuid::Uuid::now_v7())),
    }
}

/// Registers the background tools and the notification inbox on every agent.
pub(crate) struct BackgroundExtension {
    jobs: Jobs,
}

impl BackgroundExtension {
    /// The extension over `jobs`.
    pub(crate) fn new(jobs: Jobs) -> BackgroundExtension {
        BackgroundExtension { jobs }
    }
}

impl Extension for BackgroundExtension {
    fn name(&self) -> &str {
        "background"
    }

    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![Arc::new(BashOutputTool), Arc::new(KillBackgroundTool)]
    }

    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        Some(Arc::new(NotificationInbox(self.jobs.clone())))
    }
}

/// Finished background commands' notifications as a mail source.
struct NotificationInbox(Jobs);

impl NotificationInbox {
    fn fetch_now(&self) -> Result<MailBatch, InboxError> {
        let pending = self.0.pending();
        let ack_token = pending.last().map(|n| n.seq);
        let items = pending
            .into_iter()
            .map(|n| MailItem {
                id: n.id,
                text: n.text,
            })
            .collect();
        Ok(MailBatch { items, ack_token })
    }

    fn ack_now(&self, batch: &MailBatch) -> Result<(), InboxError> {
        if let Some(seq) = batch.ack_token {
            self.0.acknowledge(seq);
        }
        Ok(())
    }
}

/// In memory: answered at once.
impl InboxSource for NotificationInbox {
    fn fetch(&self) -> InboxFuture<'_, MailBatch> {
        Box::pin(std::future::ready(self.fetch_now()))
    }

    fn ack<'a>(&'a self, batch: &'a MailBatch) -> InboxFuture<'a, ()> {
        Box::pin(std::future::ready(self.ack_now(batch)))
    }
}
