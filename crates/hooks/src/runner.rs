//! [`Hooks`]: the compiled hook settings of a workspace, and firing an event — every matching
//! command at once, each run reported.

use crate::config::{HookConfigError, HookSet};
use crate::event::HookEvent;
use crate::report::{trace, HookReport, HookReporter};
use crate::run::{run_hook, HookRun};
use futures_util::future::join_all;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_settings::Settings;

/// The hooks of one workspace, ready to fire.
#[derive(Clone)]
pub struct Hooks {
    set: HookSet,
    project_dir: PathBuf,
    reporter: Option<Arc<dyn HookReporter>>,
}

impl Hooks {
    /// The hooks of `settings`, run in `project_dir`.
    pub fn new(settings: &Settings, project_dir: &Path) -> Result<Hooks, HookConfigError> {
        Ok(Hooks {
            set: HookSet::from_settings(&settings.hooks)?,
            project_dir: project_dir.to_path_buf(),
            reporter: None,
        })
    }

    /// Reports every run to `reporter` as well as to `tracing`.
    pub fn with_reporter(mut self, reporter: Arc<dyn HookReporter>) -> Hooks {
        self.reporter = Some(reporter);
        self
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Whether `event` has any hook.
    pub fn has(&self, event: HookEvent) -> bool {
        self.set.has(event)
    }

    /// The project directory hooks run in.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// Runs every hook of `event` matching `subject`, all at once, with the JSON `input` makes
    /// on stdin (made only when some hook matches); reports each run and returns them in the
    /// settings' order.
    pub async fn fire(
        &self,
        agent: &str,
        event: HookEvent,
        subject: &str,
        input: impl FnOnce() -> Value,
    ) -> Vec<HookRun> {
        let commands = self.set.select(event, subject);
        if commands.is_empty() {
            return Vec::new();
        }
        let stdin = serde_json::to_vec(&input()).unwrap_or_default();
        let runs = join_all(
            commands
                .iter()
                .map(|hook| run_hook(hook, &stdin, &self.project_dir)),
        )
        .await;
        for run in &runs {
            let report = HookReport {
                agent,
                event,
                subject,
                run,
            };
            trace(&report);
            if let Some(reporter) = &self.reporter {
                reporter.report(&report);
            }
        }
        runs
    }
}
