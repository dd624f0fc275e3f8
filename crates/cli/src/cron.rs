//! Scheduled prompts wired to the team: a fired job becomes mail (`[Scheduled] <prompt>` from
//! `cron`) in its target's mailbox on its team, which wakes the target like any mail — the
//! lead at the REPL prompt or in a headless run, a teammate idle in its loop.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use troupe_agent::transcript::now_ms;
use troupe_cron::{CronExtension, CronFile, CronJob, Deliver, Scheduler};
use troupe_protocol::{Envelope, MailKind};
use troupe_store::SharedStore;
use troupe_team::shared::{deliver, members_list};
use troupe_team::LEAD;

/// Who scheduled mail comes from.
pub const SENDER: &str = "cron";

/// Delivers fired jobs through the mailboxes of the workspace's teams.
pub struct TeamDelivery {
    troupe_dir: PathBuf,
    stores: Mutex<HashMap<String, SharedStore>>,
}

impl TeamDelivery {
    /// Delivery for the teams under `troupe_dir`.
    pub fn new(troupe_dir: &Path) -> TeamDelivery {
        TeamDelivery {
            troupe_dir: troupe_dir.to_path_buf(),
            stores: Mutex::new(HashMap::new()),
        }
    }

    fn store(&self, team: &str) -> Result<SharedStore, String> {
        let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = stores.get(team) {
            return Ok(store.clone());
        }
        let store = troupe_store::file::open(&self.troupe_dir, team)
            .map_err(|e| format!("opening team '{team}': {e}"))?;
        stores.insert(team.to_string(), store.clone());
        Ok(store)
    }
}

/// Waits for a store call from the cron file's locked, synchronous delivery (run on the
/// blocking pool, or on the main thread before the first turn): on the runtime the thread
/// belongs to, else on a small one of its own.
fn wait<T>(fut: impl std::future::Future<Output = T>) -> Result<T, String> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Ok(tokio::task::block_in_place(|| handle.block_on(fut))),
        Err(_) => crate::block_on(fut).map_err(|e| e.to_string()),
    }
}

impl Deliver for TeamDelivery {
    fn deliver(&self, job: &CronJob, message: &str) -> Result<(), String> {
        wait(self.deliver_now(job, message))?
    }

    fn check(&self, team: &str, to: &str) -> Result<(), String> {
        wait(self.check_now(team, to))?
    }
}

impl TeamDelivery {
    async fn deliver_now(&self, job: &CronJob, message: &str) -> Result<(), String> {
        let store = self.store(&job.team)?;
        let env = Envelope::new(MailKind::Message, SENDER, &job.to, message, now_ms());
        match deliver(&*store, &env).await {
            Ok(()) => Ok(()),
            Err(troupe_team::TeamError::UnknownRecipient { .. }) => {
                // Its target left the team since: the lead hears of it rather than nobody.
                let text = format!(
                    "{message}\n(scheduled for {}, who is no longer on the team)",
                    job.to
                );
                let env = Envelope::new(MailKind::Message, SENDER, LEAD, text, now_ms());
                deliver(&*store, &env).await.map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    async fn check_now(&self, team: &str, to: &str) -> Result<(), String> {
        if to == LEAD {
            return Ok(());
        }
        let store = self.store(team)?;
        let roster = store.roster().await.map_err(|e| e.to_string())?;
        match roster.get(to) {
            Some(_) => Ok(()),
            None => Err(format!(
                "'{to}' is not on team '{team}' ({}); schedule for \"lead\" or a teammate",
                members_list(&roster)
            )),
        }
    }
}

/// The scheduler of a lead process over the workspace's cron file, and the tools' extension.
pub fn scheduler(troupe_dir: &Path, team: &str) -> (Scheduler, Arc<CronExtension>) {
    let file = CronFile::in_dir(troupe_dir);
    let delivery: Arc<dyn Deliver> = Arc::new(TeamDelivery::new(troupe_dir));
    let extension = Arc::new(CronExtension::new(file.clone(), team, delivery.clone()));
    (Scheduler::new(file, delivery), extension)
}

/// The cron tools alone (a `troupe teammate` process: the lead's process runs the scheduler).
pub fn extension(troupe_dir: &Path, team: &str) -> Arc<CronExtension> {
    let delivery: Arc<dyn Deliver> = Arc::new(TeamDelivery::new(troupe_dir));
    Arc::new(CronExtension::new(
        CronFile::in_dir(troupe_dir),
        team,
        delivery,
    ))
}
