//! What Claude Code's variables ask for: `CLAUDE_CODE_ENABLE_TELEMETRY`, the exporters per
//! signal (`OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER`, `OTEL_TRACES_EXPORTER`), the OTLP
//! endpoint, protocol and headers (general and per signal), the export intervals and what
//! may be logged. Read through a lookup, so the composition root decides which sources count.

use std::collections::HashMap;
use std::time::Duration;

/// One signal's OTLP destination.
#[derive(Debug, Clone, PartialEq)]
pub struct Otlp {
    /// Where to post (the signal's full URL: `/v1/metrics`, `/v1/logs` or `/v1/traces`).
    pub url: String,
    /// Protobuf or JSON.
    pub json: bool,
    /// Extra headers (`OTEL_EXPORTER_OTLP_HEADERS` and the signal's own).
    pub headers: HashMap<String, String>,
}

/// The telemetry a run exports.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Metrics, and where.
    pub metrics: Option<Otlp>,
    /// Events (log records), and where.
    pub logs: Option<Otlp>,
    /// Traces, and where.
    pub traces: Option<Otlp>,
    /// How often metrics are exported (`OTEL_METRIC_EXPORT_INTERVAL`, 60 s).
    pub metric_interval: Duration,
    /// How often events are exported (`OTEL_LOGS_EXPORT_INTERVAL`, 5 s).
    pub logs_interval: Duration,
    /// Whether a prompt's text goes into its event (`OTEL_LOG_USER_PROMPTS=1`).
    pub log_prompts: bool,
    /// Whether a tool call's input goes into its event (`OTEL_LOG_TOOL_DETAILS=1`).
    pub log_tool_details: bool,
    /// Whether metrics carry `session.id` (`OTEL_METRICS_INCLUDE_SESSION_ID`, on).
    pub metrics_session_id: bool,
    /// Whether metrics carry `app.version` (`OTEL_METRICS_INCLUDE_VERSION`, off).
    pub metrics_version: bool,
    /// `OTEL_RESOURCE_ATTRIBUTES` (`key=value,...`).
    pub resource: Vec<(String, String)>,
}

/// The variables that configure telemetry, for `troupe config` and the docs.
pub const VARIABLES: &[&str] = &[
    "CLAUDE_CODE_ENABLE_TELEMETRY",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_LOGS_EXPORT_INTERVAL",
    "OTEL_LOG_USER_PROMPTS",
    "OTEL_LOG_TOOL_DETAILS",
    "OTEL_METRICS_INCLUDE_SESSION_ID",
    "OTEL_METRICS_INCLUDE_VERSION",
    "OTEL_RESOURCE_ATTRIBUTES",
];

fn truthy(value: Option<String>) -> bool {
    matches!(
        value.as_deref().map(str::trim),
        Some("1" | "true" | "TRUE" | "True" | "yes" | "on")
    )
}

/// `key=value,key=value` pairs (headers, resource attributes); entries without `=` are
/// skipped, values are percent-decoded as the OpenTelemetry specification says.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|entry| {
            let (k, v) = entry.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), percent_decoded(v.trim())))
        })
        .collect()
}

fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

impl Config {
    /// The telemetry `var` asks for: `Ok(None)` when it is off (no
    /// `CLAUDE_CODE_ENABLE_TELEMETRY`, or no exporter chosen), the warnings to show either
    /// way (an exporter or protocol troupe does not have is named, with what to use).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (Option<Config>, Vec<String>) {
        let mut warnings = Vec::new();
        if !truthy(var("CLAUDE_CODE_ENABLE_TELEMETRY")) {
            return (None, warnings);
        }
        let mut signal = |name: &str, kind: &str, path: &str| -> Option<Otlp> {
            let var_name = format!("OTEL_{kind}_EXPORTER");
            let exporters = var(&var_name)?;
            let mut wanted = false;
            for exporter in exporters.split(',').map(str::trim) {
                match exporter {
                    "otlp" => wanted = true,
                    "none" | "" => {}
                    other => warnings.push(format!(
                        "{var_name}={other}: troupe exports {name} over OTLP only (otlp or none); \
                         {other} is ignored"
                    )),
                }
            }
            if !wanted {
                return None;
            }
            let own = |suffix: &str| var(&format!("OTEL_EXPORTER_OTLP_{kind}_{suffix}"));
            let protocol = own("PROTOCOL")
                .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
                .unwrap_or_else(|| "http/protobuf".into());
            let json = match protocol.trim() {
                "http/protobuf" => false,
                "http/json" => true,
                other => {
                    warnings.push(format!(
                        "OTLP protocol {other:?} for {name}: troupe speaks http/protobuf and \
                         http/json; {name} go out as http/protobuf (point the endpoint at the \
                         collector's HTTP port, usually 4318)"
                    ));
                    false
                }
            };
            let url = match own("ENDPOINT") {
                Some(url) => url,
                None => {
                    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT")
                        .unwrap_or_else(|| "http://localhost:4318".into());
                    format!("{}/{path}", base.trim_end_matches('/'))
                }
            };
            let mut headers: HashMap<String, String> = var("OTEL_EXPORTER_OTLP_HEADERS")
                .map(|h| pairs(&h).into_iter().collect())
                .unwrap_or_default();
            headers.extend(own("HEADERS").map(|h| pairs(&h)).unwrap_or_default());
            Some(Otlp { url, json, headers })
        };
        let metrics = signal("metrics", "METRICS", "v1/metrics");
        let logs = signal("events", "LOGS", "v1/logs");
        let traces = signal("traces", "TRACES", "v1/traces");
        if metrics.is_none() && logs.is_none() && traces.is_none() {
            warnings.push(
                "CLAUDE_CODE_ENABLE_TELEMETRY is set but no exporter is: set \
                 OTEL_METRICS_EXPORTER, OTEL_LOGS_EXPORTER or OTEL_TRACES_EXPORTER to otlp"
                    .into(),
            );
            return (None, warnings);
        }
        let millis = |name: &str, default: u64, warnings: &mut Vec<String>| {
            let Some(text) = var(name) else {
                return Duration::from_millis(default);
            };
            match text.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    warnings.push(format!(
                        "{name}={text:?} is not a number of milliseconds; using {default}"
                    ));
                    Duration::from_millis(default)
                }
            }
        };
        let metric_interval = millis("OTEL_METRIC_EXPORT_INTERVAL", 60_000, &mut warnings);
        let logs_interval = millis("OTEL_LOGS_EXPORT_INTERVAL", 5_000, &mut warnings);
        let config = Config {
            metrics,
            logs,
            traces,
            metric_interval,
            logs_interval,
            log_prompts: truthy(var("OTEL_LOG_USER_PROMPTS")),
            log_tool_details: truthy(var("OTEL_LOG_TOOL_DETAILS")),
            metrics_session_id: var("OTEL_METRICS_INCLUDE_SESSION_ID")
                .is_none_or(|v| v.trim() != "false"),
            metrics_version: truthy(var("OTEL_METRICS_INCLUDE_VERSION")),
            resource: var("OTEL_RESOURCE_ATTRIBUTES")
                .map(|r| pairs(&r))
                .unwrap_or_default(),
        };
        (Some(config), warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> (Option<Config>, Vec<String>) {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn off_unless_enabled_and_an_exporter_is_chosen() {
        assert_eq!(config(&[("OTEL_METRICS_EXPORTER", "otlp")]).0, None);
        let (none, warnings) = config(&[("CLAUDE_CODE_ENABLE_TELEMETRY", "1")]);
        assert_eq!(none, None);
        assert!(warnings[0].contains("no exporter"), "{warnings:?}");
    }

    #[test]
    fn endpoints_protocols_and_headers_per_signal() {
        let (c, warnings) = config(&[
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
            ("OTEL_METRICS_EXPORTER", "otlp"),
            ("OTEL_LOGS_EXPORTER", "otlp,console"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/"),
            ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20t,x=1"),
            ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x=2"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "250"),
        ]);
        let c = c.unwrap_or_else(|| panic!("telemetry is on: {warnings:?}"));
        let metrics = c.metrics.unwrap_or_else(|| panic!("metrics"));
        assert_eq!(metrics.url, "http://127.0.0.1:9/v1/metrics");
        assert!(!metrics.json);
        assert_eq!(metrics.headers["Authorization"], "Bearer t");
        let logs = c.logs.unwrap_or_else(|| panic!("logs"));
        assert!(logs.json);
        assert_eq!(logs.headers["x"], "2");
        assert_eq!(c.traces, None);
        assert_eq!(c.metric_interval, Duration::from_millis(250));
        assert!(c.metrics_session_id && !c.log_prompts);
        assert!(
            warnings.iter().any(|w| w.contains("console")),
            "{warnings:?}"
        );
    }

    #[test]
    fn grpc_is_named_and_falls_back_to_http() {
        let (c, warnings) = config(&[
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://h:4318/v1/traces",
            ),
        ]);
        let traces = c.and_then(|c| c.traces).unwrap_or_else(|| panic!("traces"));
        assert_eq!(traces.url, "http://h:4318/v1/traces");
        assert!(warnings.iter().any(|w| w.contains("4318")), "{warnings:?}");
    }
}
