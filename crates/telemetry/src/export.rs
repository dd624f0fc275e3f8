//! The OpenTelemetry providers a [`Config`] asks for, each with its OTLP/HTTP exporter on the
//! SDK's own threads (a periodic reader for metrics, batch processors for events and spans),
//! and their flush at the end of the run.

use crate::config::{Config, Otlp};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use std::time::Duration;

/// The providers of one run.
pub(crate) struct Providers {
    pub metrics: Option<SdkMeterProvider>,
    pub logs: Option<SdkLoggerProvider>,
    pub traces: Option<SdkTracerProvider>,
}

/// How long one export may take before it is given up (the run's end waits this long at most
/// per signal).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// An exporter builder pointed at `otlp`: its URL, encoding, headers and time limit.
fn towards<B: WithExportConfig + WithHttpConfig>(builder: B, otlp: &Otlp) -> B {
    let protocol = match otlp.json {
        true => Protocol::HttpJson,
        false => Protocol::HttpBinary,
    };
    builder
        .with_protocol(protocol)
        .with_endpoint(otlp.url.clone())
        .with_headers(otlp.headers.clone())
        .with_timeout(EXPORT_TIMEOUT)
}

fn resource(config: &Config, service_version: &str) -> Resource {
    let mut attributes = vec![
        KeyValue::new("service.name", "troupe"),
        KeyValue::new("service.version", service_version.to_string()),
    ];
    attributes.extend(
        config
            .resource
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
    );
    Resource::builder_empty()
        .with_attributes(attributes)
        .build()
}

impl Providers {
    /// Builds the exporters; an endpoint that does not parse is an error naming it.
    pub fn start(config: &Config, service_version: &str) -> Result<Providers, String> {
        // The exporters' HTTP client is reqwest on rustls without a bundled provider: troupe's
        // (ring) must be installed first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource = resource(config, service_version);
        let metrics = match &config.metrics {
            Some(otlp) => {
                let exporter = towards(
                    opentelemetry_otlp::MetricExporter::builder().with_http(),
                    otlp,
                )
                // Claude Code's default preference.
                .with_temporality(Temporality::Delta)
                .build()
                .map_err(|e| format!("metrics exporter for {}: {e}", otlp.url))?;
                let reader = PeriodicReader::builder(exporter)
                    .with_interval(config.metric_interval)
                    .build();
                Some(
                    SdkMeterProvider::builder()
                        .with_resource(resource.clone())
                        .with_reader(reader)
                        .build(),
                )
            }
            None => None,
        };
        let logs = match &config.logs {
            Some(otlp) => {
                let exporter =
                    towards(opentelemetry_otlp::LogExporter::builder().with_http(), otlp)
                        .build()
                        .map_err(|e| format!("events exporter for {}: {e}", otlp.url))?;
                let batch = opentelemetry_sdk::logs::BatchConfigBuilder::default()
                    .with_scheduled_delay(config.logs_interval)
                    .build();
                let processor = opentelemetry_sdk::logs::BatchLogProcessor::builder(exporter)
                    .with_batch_config(batch)
                    .build();
                Some(
                    SdkLoggerProvider::builder()
                        .with_resource(resource.clone())
                        .with_log_processor(processor)
                        .build(),
                )
            }
            None => None,
        };
        let traces = match &config.traces {
            Some(otlp) => {
                let exporter = towards(
                    opentelemetry_otlp::SpanExporter::builder().with_http(),
                    otlp,
                )
                .build()
                .map_err(|e| format!("traces exporter for {}: {e}", otlp.url))?;
                let batch = opentelemetry_sdk::trace::BatchConfigBuilder::default()
                    .with_scheduled_delay(config.logs_interval)
                    .build();
                let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
                    .with_batch_config(batch)
                    .build();
                Some(
                    SdkTracerProvider::builder()
                        .with_resource(resource)
                        .with_span_processor(processor)
                        .build(),
                )
            }
            None => None,
        };
        Ok(Providers {
            metrics,
            logs,
            traces,
        })
    }

    /// Exports what is pending and stops the exporters' threads; what could not be sent is
    /// returned as one line per signal (the collector went away), for the log.
    pub fn shutdown(&self) -> Vec<String> {
        let mut failed = Vec::new();
        if let Some(p) = &self.traces {
            if let Err(e) = p.shutdown() {
                failed.push(format!("traces: {e}"));
            }
        }
        if let Some(p) = &self.logs {
            if let Err(e) = p.shutdown() {
                failed.push(format!("events: {e}"));
            }
        }
        if let Some(p) = &self.metrics {
            if let Err(e) = p.shutdown() {
                failed.push(format!("metrics: {e}"));
            }
        }
        failed
    }
}
