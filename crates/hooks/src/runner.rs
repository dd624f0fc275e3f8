//! [`Hooks`]: the compiled hook settings of a workspace, and firing an event — every matching
//! command at once, each run reported.

use crate::callback::Callbacks;
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
    callbacks: Option<Arc<Callbacks>>,
}

impl Hooks {
    /// The hooks of `settings`, run in `project_dir`.
    pub fn new(settings: &Settings, project_dir: &Path) -> Result<Hooks, HookConfigError> {
        Ok(Hooks {
            set: HookSet::from_settings(&settings.hooks)?,
            project_dir: project_dir.to_path_buf(),
            reporter: None,
            callbacks: None,
        })
    }

    /// Reports every run to `reporter` as well as to `tracing`.
    pub fn with_reporter(mut self, reporter: Arc<dyn HookReporter>) -> Hooks {
        self.reporter = Some(reporter);
        self
    }

    /// Also calls the hook callbacks of a controlling process (the Agent SDK's), registered
    /// in `callbacks` now or later.
    pub fn with_callbacks(mut self, callbacks: Arc<Callbacks>) -> Hooks {
        self.callbacks = Some(callbacks);
        self
    }

    /// Whether no hook is configured and none can be registered later.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.callbacks.is_none()
    }

    /// Whether `event` has any hook.
    pub fn has(&self, event: HookEvent) -> bool {
        self.set.has(event) || self.callbacks.as_ref().is_some_and(|c| c.has(event))
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
        let callbacks = match &self.callbacks {
            Some(callbacks) => callbacks.select(event, subject),
            None => Vec::new(),
        };
        if commands.is_empty() && callbacks.is_empty() {
            return Vec::new();
        }
        let input = input();
        let stdin = serde_json::to_vec(&input).unwrap_or_default();
        let called = async {
            match &self.callbacks {
                Some(cbs) => join_all(callbacks.iter().map(|cb| cbs.run(event, cb, &input))).await,
                None => Vec::new(),
            }
        };
        let ran = join_all(
            commands
                .iter()
                .map(|hook| run_hook(hook, &stdin, &self.project_dir)),
        );
        let (mut runs, called) = futures_util::future::join(ran, called).await;
        runs.extend(called);
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
