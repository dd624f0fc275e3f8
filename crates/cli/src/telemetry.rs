//! Telemetry for a run: Claude Code's variables, read from troupe's own environment and the
//! person's settings (`env` in user settings and `--settings`), never from a repository's
//! settings (a cloned project cannot switch telemetry on or point it elsewhere); started for
//! the session once its id is known, flushed when the run ends.

use troupe_settings::{Loaded, Scope};
use troupe_telemetry::Config;

/// The telemetry `loaded` and the environment ask for, and what to warn about.
pub fn config(loaded: &Loaded) -> (Option<Config>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut own = std::collections::HashMap::new();
    for layer in &loaded.layers {
        let named: Vec<&String> = layer
            .settings
            .env
            .keys()
            .filter(|k| troupe_telemetry::VARIABLES.contains(&k.as_str()))
            .collect();
        if named.is_empty() {
            continue;
        }
        if matches!(layer.scope, Scope::User | Scope::CommandLine) {
            for key in named {
                own.insert(key.clone(), layer.settings.env[key].clone());
            }
        } else {
            warnings.push(format!(
                "{}: telemetry variables ({}) are honoured in user settings, --settings and the \
                 environment only; a project's settings cannot switch telemetry on or point it \
                 elsewhere",
                layer.origin,
                named
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let (config, more) = Config::from_vars(|key| {
        own.get(key)
            .cloned()
            .or_else(|| std::env::var(key).ok())
            .filter(|v| !v.is_empty())
    });
    warnings.extend(more);
    (config, warnings)
}

/// Starts exporting for the session `session_id`; an exporter that cannot be built is a
/// warning and the run goes on without telemetry.
pub fn start(config: Option<&Config>, session_id: &str) {
    let Some(config) = config else {
        return;
    };
    let pricing: troupe_telemetry::Pricing = Box::new(crate::cost::known_cost_usd);
    if let Err(e) = troupe_telemetry::start(
        config,
        session_id.to_string(),
        env!("CARGO_PKG_VERSION"),
        pricing,
    ) {
        eprintln!("troupe: warning: telemetry is off: {e}");
    }
}

/// Exports what is pending before the process ends.
pub fn finish() {
    for failure in troupe_telemetry::shutdown() {
        tracing::warn!(%failure, "telemetry could not be exported");
    }
}
