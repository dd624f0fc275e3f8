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

/// The hook types troupe runs (an `agent` hook runs as a `prompt` hook: one model call, without
/// tools); any other loads and is skipped with a warning (see [`warnings`]).
pub const RUNNABLE_TYPES: [&str; 5] = ["command", "http", "prompt", "agent", "mcp_tool"];

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

/// The hooks of `settings` troupe runs, run in `workspace` (`prompt` hooks asking the run's
/// model, `mcp_tool` hooks calling its MCP servers: `services`, from
/// [`crate::hook_services::of`]), each run recorded in `store`'s event log.
pub async fn extension(
    services: (
        Arc<dyn troupe_hooks::HookModel>,
        Arc<dyn troupe_hooks::HookTools>,
    ),
    settings: &Settings,
    workspace: &Path,
    mode: PermissionMode,
    store: SharedStore,
) -> Result<HooksExtension> {
    let hooks = match settings.other.get("disableAllHooks") {
        Some(serde_json::Value::Bool(true)) => Default::default(),
        _ => http_policy(
            settings,
            troupe_settings::runnable_hooks(&settings.hooks, &runs),
        ),
    };
    let runnable = Settings {
        hooks,
        ..settings.clone()
    };
    let (model, tools) = services;
    let mut hooks = Hooks::new(&runnable, workspace)
        .context("reading the settings' hooks")?
        .with_model(model)
        .with_tools(tools);
    if let Some(callbacks) = SDK_CALLBACKS.get() {
        hooks = hooks.with_callbacks(callbacks.clone());
    }
    let record = move |report: &HookReport<'_>| {
        crate::hook_events::forward(report);
        let (store, event) = (store.clone(), event(report));
        let write = async move {
            if let Err(e) = store.record(&event).await {
                tracing::warn!(error = %e, "could not record a hook run in the team's event log");
            }
        };
        // Hooks report from the agent's tasks: the event is written beside them, in order of
        // the reports on a backend that appends in order.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(write);
            }
            Err(_) => {
                let _ = crate::block_on(write);
            }
        }
    };
    Ok(HooksExtension::new(
        hooks.with_reporter(Arc::new(record)),
        mode.to_string(),
    ))
}

/// `hooks` as the http settings allow them: an http hook whose URL no `allowedHttpHookUrls`
/// pattern matches is left out (with a warning), and its `allowedEnvVars` are cut to those
/// `httpHookAllowedEnvVars` also names.
fn http_policy(
    settings: &Settings,
    mut hooks: std::collections::BTreeMap<String, Vec<troupe_settings::HookMatcher>>,
) -> std::collections::BTreeMap<String, Vec<troupe_settings::HookMatcher>> {
    let strings = |key: &str| -> Option<Vec<String>> {
        let list = settings.other.get(key)?.as_array()?;
        Some(
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        )
    };
    let urls = strings("allowedHttpHookUrls");
    let vars = strings("httpHookAllowedEnvVars");
    for matchers in hooks.values_mut() {
        for matcher in matchers.iter_mut() {
            matcher.hooks.retain_mut(|hook| {
                if hook.kind != "http" {
                    return true;
                }
                if let Some(vars) = &vars {
                    hook.allowed_env_vars.retain(|v| vars.contains(v));
                }
                let url = hook.url.as_deref().unwrap_or_default();
                let allowed = urls
                    .as_ref()
                    .is_none_or(|patterns| patterns.iter().any(|p| wildcard(p, url)));
                if !allowed {
                    eprintln!(
                        "troupe: the http hook to {url} is skipped: no allowedHttpHookUrls pattern matches it"
                    );
                }
                allowed
            });
        }
    }
    hooks
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
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

#[cfg(test)]
mod tests {
    #[test]
    fn url_patterns_take_star_as_any_run_of_characters() {
        use super::wildcard;
        assert!(wildcard(
            "http://localhost:*/*",
            "http://localhost:8080/hook"
        ));
        assert!(wildcard(
            "https://hooks.example.com/*",
            "https://hooks.example.com/a/b"
        ));
        assert!(!wildcard(
            "https://hooks.example.com/*",
            "https://evil.example/hooks.example.com/"
        ));
        assert!(wildcard("http://exact/x", "http://exact/x"));
        assert!(!wildcard("http://exact/x", "http://exact/xy"));
        assert!(!wildcard("a*a", "a"));
    }
}
