//! [`Hooks`]: the compiled hook settings of a workspace, and firing an event — every matching
//! command at once, each run reported.

use crate::callback::Callbacks;
use crate::config::HookCommand;
use crate::config::{HookConfigError, HookSet};
use crate::env_file::{EnvFile, VAR as ENV_FILE_VAR};
use crate::event::HookEvent;
use crate::report::{trace, HookReport, HookReporter};
use crate::run::{run_hook_with, HookRun};
use crate::services::{HookModel, HookTools};
use futures_util::future::join_all;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use troupe_settings::Settings;

/// The hooks of one workspace, ready to fire.
#[derive(Clone)]
pub struct Hooks {
    set: HookSet,
    project_dir: PathBuf,
    reporter: Option<Arc<dyn HookReporter>>,
    callbacks: Option<Arc<Callbacks>>,
    /// The `once` hooks that already ran (event and command).
    ran_once: Arc<Mutex<HashSet<(HookEvent, String)>>>,
    /// The model `prompt` hooks ask.
    model: Option<Arc<dyn HookModel>>,
    /// The MCP tools `mcp_tool` hooks call.
    tools: Option<Arc<dyn HookTools>>,
}

/// What one firing is about, beyond its event.
#[derive(Debug, Clone, Copy, Default)]
pub struct Occasion<'a> {
    /// The tool name or occasion matchers are compared with.
    pub subject: &'a str,
    /// The tool call (troupe's tool name and its input) a hook's `if` rule is matched with.
    pub call: Option<(&'a str, &'a Value)>,
    /// Whether the hooks get a `CLAUDE_ENV_FILE` to write variables for later commands to.
    pub env_file: bool,
}

impl Hooks {
    /// The hooks of `settings`, run in `project_dir`.
    pub fn new(settings: &Settings, project_dir: &Path) -> Result<Hooks, HookConfigError> {
        Ok(Hooks {
            set: HookSet::from_settings(&settings.hooks)?,
            project_dir: project_dir.to_path_buf(),
            reporter: None,
            callbacks: None,
            ran_once: Arc::new(Mutex::new(HashSet::new())),
            model: None,
            tools: None,
        })
    }

    /// `prompt` (and `agent`) hooks ask `model`; without it they cannot run.
    pub fn with_model(mut self, model: Arc<dyn HookModel>) -> Hooks {
        self.model = Some(model);
        self
    }

    /// `mcp_tool` hooks call their tools through `tools`; without it they cannot run.
    pub fn with_tools(mut self, tools: Arc<dyn HookTools>) -> Hooks {
        self.tools = Some(tools);
        self
    }

    /// Runs one hook of whatever kind with `stdin` (the event's JSON) for `agent`.
    async fn run_one(
        &self,
        agent: &str,
        hook: &HookCommand,
        stdin: &[u8],
        env: &[(String, String)],
    ) -> HookRun {
        if let Some(target) = &hook.prompt {
            return crate::prompt_hook::run(hook, target, stdin, agent, self.model.as_deref())
                .await;
        }
        if let Some(target) = &hook.mcp {
            return crate::mcp_hook::run(hook, target, stdin, self.tools.as_deref()).await;
        }
        run_hook_with(hook, stdin, &self.project_dir, env).await
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
        let occasion = Occasion {
            subject,
            ..Occasion::default()
        };
        self.fire_on(agent, event, occasion, input).await
    }

    /// [`Self::fire`] for `occasion`: hooks whose `if` the call does not match are left out, a
    /// `once` hook that ran is not run again, an `async` one runs in the background (reported
    /// when it ends, deciding nothing), and with `env_file` what the hooks write to
    /// `CLAUDE_ENV_FILE` is set for every later command.
    pub async fn fire_on(
        &self,
        agent: &str,
        event: HookEvent,
        occasion: Occasion<'_>,
        input: impl FnOnce() -> Value,
    ) -> Vec<HookRun> {
        let subject = occasion.subject;
        let commands: Vec<&HookCommand> = self
            .set
            .select(event, subject)
            .into_iter()
            .filter(|hook| self.applies(hook, occasion))
            .filter(|hook| self.first_time(event, hook))
            .collect();
        let callbacks = match &self.callbacks {
            Some(callbacks) => callbacks.select(event, subject),
            None => Vec::new(),
        };
        if commands.is_empty() && callbacks.is_empty() {
            return Vec::new();
        }
        let input = input();
        let stdin = serde_json::to_vec(&input).unwrap_or_default();
        let env_file = occasion.env_file.then(EnvFile::create).flatten();
        let env: Vec<(String, String)> = env_file
            .iter()
            .map(|f| (ENV_FILE_VAR.to_string(), f.path().display().to_string()))
            .collect();
        let (background, waited): (Vec<&HookCommand>, Vec<&HookCommand>) =
            commands.into_iter().partition(|hook| hook.background);
        for hook in background {
            self.run_in_background(agent, event, subject, hook.clone(), stdin.clone());
        }
        let called = async {
            match &self.callbacks {
                Some(cbs) => join_all(callbacks.iter().map(|cb| cbs.run(event, cb, &input))).await,
                None => Vec::new(),
            }
        };
        let ran = join_all(
            waited
                .iter()
                .map(|hook| self.run_one(agent, hook, &stdin, &env)),
        );
        let (mut runs, called) = futures_util::future::join(ran, called).await;
        runs.extend(called);
        if let Some(file) = &env_file {
            let set = file.apply();
            if !set.is_empty() {
                tracing::debug!(?set, "variables from CLAUDE_ENV_FILE");
            }
        }
        for run in &runs {
            self.report(agent, event, subject, run);
        }
        runs
    }

    /// Whether `hook` runs on `occasion`: no `if`, or a tool call its rule matches.
    fn applies(&self, hook: &HookCommand, occasion: Occasion<'_>) -> bool {
        match (&hook.condition, occasion.call) {
            (None, _) => true,
            (Some(rule), Some((tool, input))) => {
                crate::condition::matches(rule, tool, input, &self.project_dir)
            }
            // Claude Code reads `if` on tool events only.
            (Some(_), None) => true,
        }
    }

    /// Whether `hook` may run now: always, or for a `once` hook the first time.
    fn first_time(&self, event: HookEvent, hook: &HookCommand) -> bool {
        if !hook.once {
            return true;
        }
        let mut ran = match self.ran_once.lock() {
            Ok(ran) => ran,
            Err(poisoned) => poisoned.into_inner(),
        };
        ran.insert((event, hook.command.clone()))
    }

    /// Starts an `async` hook without waiting for it; its run is reported when it ends.
    fn run_in_background(
        &self,
        agent: &str,
        event: HookEvent,
        subject: &str,
        hook: HookCommand,
        stdin: Vec<u8>,
    ) {
        let this = self.clone();
        let agent = agent.to_string();
        let subject = subject.to_string();
        tokio::spawn(async move {
            let run = this.run_one(&agent, &hook, &stdin, &[]).await;
            this.report(&agent, event, &subject, &run);
        });
    }

    fn report(&self, agent: &str, event: HookEvent, subject: &str, run: &HookRun) {
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
}
