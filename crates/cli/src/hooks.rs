//! The workspace's hooks (settings `hooks`) for the lead and its teammates: one
//! [`HooksExtension`] whose every run is recorded in the team's event log.

use anyhow::{Context, Result};
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use troupe_agent::permissions::PermissionMode;
use troupe_hooks::{Callbacks, Ending, HookReport, Hooks, HooksExtension};
use troupe_protocol::{Event, EventKind};
use troupe_settings::Settings;
use troupe_store::SharedStore;

/// The hook callbacks of the process driving this one (`--input-format stream-json`), set
/// before the lead is built; its agents call them beside the settings' hooks.
static SDK_CALLBACKS: OnceLock<Arc<Callbacks>> = OnceLock::new();

/// Makes every agent built from now on call `callbacks` too (once per process).
pub fn use_sdk_callbacks(callbacks: Arc<Callbacks>) {
    let _ = SDK_CALLBACKS.set(callbacks);
}

/// The hook types troupe runs; the others (`prompt`, `agent`, `mcp_tool`) load and are skipped
/// with a warning (see [`warnings`]).
pub const RUNNABLE_TYPES: [&str; 2] = ["command", "http"];

fn runs(kind: &str) -> bool {
    RUNNABLE_TYPES.contains(&kind)
}

fn fires(event: &str) -> bool {
    troupe_hooks::HookEvent::parse(event).is_some()
}

/// What the `hooks` of each settings layer hold that troupe does not run: an event it does not
/// fire, a hook type it does not run (each said once).
pub fn warnings(loaded: &troupe_settings::Loaded) -> Vec<troupe_settings::Warning> {
    loaded
        .layers
        .iter()
        .flat_map(|l| troupe_settings::hook_warnings(&l.settings.hooks, &l.origin, &fires, &runs))
        .collect()
}

/// The hooks of `settings` troupe runs, run in `workspace`, each run recorded in `store`'s
/// event log.
pub fn extension(
    settings: &Settings,
    workspace: &Path,
    mode: PermissionMode,
    store: SharedStore,
) -> Result<HooksExtension> {
    let runnable = Settings {
        hooks: troupe_settings::runnable_hooks(&settings.hooks, &runs),
        ..settings.clone()
    };
    let mut hooks = Hooks::new(&runnable, workspace).context("reading the settings' hooks")?;
    if let Some(callbacks) = SDK_CALLBACKS.get() {
        hooks = hooks.with_callbacks(callbacks.clone());
    }
    let record = move |report: &HookReport<'_>| {
        if let Err(e) = store.record(&event(report)) {
            tracing::warn!(error = %e, "could not record a hook run in the team's event log");
        }
    };
    Ok(HooksExtension::new(
        hooks.with_reporter(Arc::new(record)),
        mode.to_string(),
    ))
}

/// The `hook_ran` event of one run.
fn event(report: &HookReport<'_>) -> Event {
    let run = report.run;
    let (outcome, code) = match &run.ending {
        Ending::Exited(code) => ("exited", Some(*code)),
        Ending::Signalled(_) => ("signalled", None),
        Ending::TimedOut(_) => ("timed_out", None),
        Ending::NotStarted(_) => ("not_started", None),
    };
    Event::new(
        EventKind::HookRan,
        Some(report.agent),
        format!("{} `{}`: {}", report.event, run.command, report.summary()),
        troupe_agent::transcript::now_ms(),
    )
    .with_data(json!({
        "event": report.event.as_str(),
        "matched": report.subject,
        "command": run.command,
        "outcome": outcome,
        "exit_code": code,
        "duration_ms": run.duration.as_millis() as u64,
        "system_message": report.system_message(),
    }))
}
