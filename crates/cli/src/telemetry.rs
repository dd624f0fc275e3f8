//! Telemetry for a run: Claude Code's variables, read from troupe's own environment and the
//! person's settings (`env` in user settings and `--settings`), never from a repository's
//! settings (a cloned project cannot switch telemetry on or point it elsewhere); started for
//! the session once its id is known, flushed when the run ends.

use troupe_settings::{Loaded, Scope};
#[cfg(feature = "telemetry")]
pub use troupe_telemetry::Config;
#[cfg(feature = "telemetry")]
use troupe_telemetry::VARIABLES;

/// What telemetry asks for, which a build without the `telemetry` feature never has.
#[cfg(not(feature = "telemetry"))]
pub enum Config {}

/// The one variable a build without the `telemetry` feature looks at: the switch, to say that
/// nothing is exported.
#[cfg(not(feature = "telemetry"))]
const VARIABLES: &[&str] = &["CLAUDE_CODE_ENABLE_TELEMETRY"];

/// The telemetry `loaded` and the environment ask for, and what to warn about.
pub fn config(loaded: &Loaded) -> (Option<Config>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut own = std::collections::HashMap::new();
    for layer in &loaded.layers {
        let named: Vec<&String> = layer
            .settings
            .env
            .keys()
            .filter(|k| VARIABLES.contains(&k.as_str()))
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
    let (config, more) = from_vars(|key| {
        own.get(key)
            .cloned()
            .or_else(|| std::env::var(key).ok())
            .filter(|v| !v.is_empty())
    });
    warnings.extend(more);
    (config, warnings)
}

#[cfg(feature = "telemetry")]
fn from_vars(var: impl Fn(&str) -> Option<String>) -> (Option<Config>, Vec<String>) {
    Config::from_vars(var)
}

/// Nothing, and a warning when `CLAUDE_CODE_ENABLE_TELEMETRY` asks for telemetry.
#[cfg(not(feature = "telemetry"))]
fn from_vars(var: impl Fn(&str) -> Option<String>) -> (Option<Config>, Vec<String>) {
    let switch = var("CLAUDE_CODE_ENABLE_TELEMETRY");
    let asked = matches!(
        switch.as_deref().map(str::trim),
        Some("1" | "true" | "TRUE" | "True" | "yes" | "on")
    );
    let warning = asked.then(|| {
        format!(
            "CLAUDE_CODE_ENABLE_TELEMETRY is set but nothing is exported: {}",
            crate::features::missing("OpenTelemetry export", "telemetry")
        )
    });
    (None, warning.into_iter().collect())
}

/// Starts exporting for the session `session_id`; an exporter that cannot be built is a
/// warning and the run goes on without telemetry.
#[cfg(feature = "telemetry")]
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

/// Nothing to start: a build without telemetry never has a `Config`.
#[cfg(not(feature = "telemetry"))]
pub fn start(config: Option<&Config>, _session_id: &str) {
    if let Some(config) = config {
        match *config {}
    }
}

/// Exports what is pending before the process ends.
#[cfg(feature = "telemetry")]
pub fn finish() {
    for failure in troupe_telemetry::shutdown() {
        tracing::warn!(%failure, "telemetry could not be exported");
    }
}

/// Nothing is pending without telemetry.
#[cfg(not(feature = "telemetry"))]
pub fn finish() {}

#[cfg(all(test, not(feature = "telemetry")))]
mod tests {
    #[test]
    fn asking_for_telemetry_warns_that_the_build_has_none() {
        let on = |key: &str| (key == "CLAUDE_CODE_ENABLE_TELEMETRY").then(|| "1".to_string());
        let (config, warnings) = super::from_vars(on);
        assert!(config.is_none());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("Cargo feature `telemetry`"),
            "{warnings:?}"
        );
        assert!(super::from_vars(|_| None).1.is_empty());
    }
}
