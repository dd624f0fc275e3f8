//! Telemetry as Claude Code exports it (`CLAUDE_CODE_ENABLE_TELEMETRY` and the `OTEL_*`
//! variables): its metrics and events over OTLP/HTTP through the `opentelemetry` crates, and
//! beyond it a trace per turn with a span per model call and tool call, joined across
//! teammates through the trace context their mail carries.
//!
//! [`start`] builds the exporters and makes the process's session driver report to them
//! ([`troupe_driver::observe_with`]); [`shutdown`] exports what is pending at the end of the
//! run. Nothing here runs unless telemetry is on.

mod config;
mod export;
mod observe;
mod record;

pub use config::{Config, VARIABLES};
pub use observe::Pricing;

use std::sync::OnceLock;

static PROVIDERS: OnceLock<export::Providers> = OnceLock::new();

/// Starts exporting what `config` asks for, for the session `session_id`: every driver of the
/// process reports to it from now on, and the session is counted. An exporter that cannot be
/// built is an error naming it (the run goes on without telemetry).
pub fn start(
    config: &Config,
    session_id: String,
    version: &str,
    pricing: Pricing,
) -> Result<(), String> {
    let providers = export::Providers::start(config, version)?;
    let recorder = record::Recorder::new(&providers, session_id, version.to_string(), config);
    let watch = observe::Watch::new(recorder, pricing);
    watch.recorder().session_started();
    if PROVIDERS.set(providers).is_err() {
        return Err("telemetry was started twice".into());
    }
    troupe_driver::observe_with(Box::new(watch));
    Ok(())
}

/// Exports what is pending and stops the exporters (at the end of a run); what could not be
/// sent is returned, one line per signal.
pub fn shutdown() -> Vec<String> {
    PROVIDERS.get().map(|p| p.shutdown()).unwrap_or_default()
}
