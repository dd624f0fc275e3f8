//! Claude Code's metrics and events, under its names: the counters
//! (`claude_code.session.count`, `.token.usage`, `.cost.usage`, `.lines_of_code.count`,
//! `.code_edit_tool.decision`) and the events (`claude_code.user_prompt`, `.api_request`,
//! `.api_error`, `.tool_result`, `.tool_decision`), each with the standard attributes.

use opentelemetry::logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity};
use opentelemetry::metrics::{Counter, MeterProvider};
use opentelemetry::trace::{SpanContext, TracerProvider};
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;
use opentelemetry_sdk::trace::SdkTracer;
use std::time::SystemTime;

/// The instruments of one run.
pub(crate) struct Meters {
    session: Counter<u64>,
    tokens: Counter<u64>,
    cost: Counter<f64>,
    lines: Counter<u64>,
    edit_decision: Counter<u64>,
}

/// What the recorder writes with.
pub(crate) struct Recorder {
    pub meters: Option<Meters>,
    pub logger: Option<SdkLogger>,
    pub tracer: Option<SdkTracer>,
    /// The run's session id (`session.id`).
    pub session_id: String,
    /// troupe's version (`app.version`).
    pub version: String,
    pub metrics_session_id: bool,
    pub metrics_version: bool,
    pub log_prompts: bool,
    pub log_tool_details: bool,
}

/// One model call's figures, for `claude_code.api_request` and the counters.
pub struct ApiRequest<'a> {
    /// The model that answered.
    pub model: &'a str,
    /// Its price, when troupe knows one.
    pub cost_usd: Option<f64>,
    /// From the request to the reply, in milliseconds.
    pub duration_ms: u64,
    /// Tokens: input, output, cache read, cache creation.
    pub tokens: [u64; 4],
}

impl Recorder {
    pub fn new(
        providers: &crate::export::Providers,
        session_id: String,
        version: String,
        config: &crate::Config,
    ) -> Recorder {
        let meters = providers.metrics.as_ref().map(|p| {
            let meter = p.meter("com.anthropic.claude_code");
            Meters {
                session: meter
                    .u64_counter("claude_code.session.count")
                    .with_unit("count")
                    .with_description("Count of CLI sessions started")
                    .build(),
                tokens: meter
                    .u64_counter("claude_code.token.usage")
                    .with_unit("tokens")
                    .with_description("Number of tokens used")
                    .build(),
                cost: meter
                    .f64_counter("claude_code.cost.usage")
                    .with_unit("USD")
                    .with_description("Cost of the Claude Code session")
                    .build(),
                lines: meter
                    .u64_counter("claude_code.lines_of_code.count")
                    .with_unit("count")
                    .with_description("Count of lines of code modified")
                    .build(),
                edit_decision: meter
                    .u64_counter("claude_code.code_edit_tool.decision")
                    .with_unit("count")
                    .with_description("Count of code editing tool permission decisions")
                    .build(),
            }
        });
        Recorder {
            meters,
            logger: providers
                .logs
                .as_ref()
                .map(|p| p.logger("com.anthropic.claude_code.events")),
            tracer: providers.traces.as_ref().map(|p| p.tracer("troupe")),
            session_id,
            version,
            metrics_session_id: config.metrics_session_id,
            metrics_version: config.metrics_version,
            log_prompts: config.log_prompts,
            log_tool_details: config.log_tool_details,
        }
    }

    /// The standard attributes of a metric point, then `extra`.
    fn metric_attributes(&self, agent: &str, extra: &[KeyValue]) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(extra.len() + 3);
        if self.metrics_session_id {
            attributes.push(KeyValue::new("session.id", self.session_id.clone()));
        }
        if self.metrics_version {
            attributes.push(KeyValue::new("app.version", self.version.clone()));
        }
        attributes.push(KeyValue::new("agent.name", agent.to_string()));
        attributes.extend_from_slice(extra);
        attributes
    }

    pub fn session_started(&self) {
        if let Some(m) = &self.meters {
            m.session.add(1, &self.metric_attributes("lead", &[]));
        }
    }

    /// Emits the event `claude_code.<name>` with the standard attributes, `fields`, and the
    /// span it happened in (so a backend links the event to its trace).
    pub fn event(
        &self,
        name: &'static str,
        agent: &str,
        prompt_id: &str,
        span: Option<&SpanContext>,
        fields: Vec<(&'static str, AnyValue)>,
    ) {
        let Some(logger) = &self.logger else {
            return;
        };
        let mut record = logger.create_log_record();
        let now = SystemTime::now();
        record.set_event_name(name);
        record.set_timestamp(now);
        record.set_observed_timestamp(now);
        record.set_severity_number(Severity::Info);
        record.set_body(AnyValue::from(format!("claude_code.{name}")));
        record.add_attribute("event.name", name);
        record.add_attribute("event.timestamp", rfc3339(now));
        record.add_attribute("session.id", self.session_id.clone());
        record.add_attribute("prompt.id", prompt_id.to_string());
        record.add_attribute("agent.name", agent.to_string());
        record.add_attribute("app.version", self.version.clone());
        for (k, v) in fields {
            record.add_attribute(k, v);
        }
        if let Some(sc) = span.filter(|sc| sc.is_valid()) {
            record.set_trace_context(sc.trace_id(), sc.span_id(), Some(sc.trace_flags()));
        }
        logger.emit(record);
    }

    pub fn user_prompt(
        &self,
        agent: &str,
        prompt_id: &str,
        span: Option<&SpanContext>,
        text: &str,
    ) {
        let prompt = if self.log_prompts {
            AnyValue::from(text.to_string())
        } else {
            AnyValue::from("<REDACTED>")
        };
        let fields = vec![
            ("prompt_length", AnyValue::from(text.chars().count() as i64)),
            ("prompt", prompt),
        ];
        self.event("user_prompt", agent, prompt_id, span, fields);
    }

    pub fn api_request(
        &self,
        agent: &str,
        prompt_id: &str,
        span: Option<&SpanContext>,
        call: &ApiRequest<'_>,
    ) {
        if let Some(m) = &self.meters {
            let kinds = ["input", "output", "cacheRead", "cacheCreation"];
            for (kind, count) in kinds.iter().zip(call.tokens) {
                let extra = [
                    KeyValue::new("type", *kind),
                    KeyValue::new("model", call.model.to_string()),
                ];
                m.tokens.add(count, &self.metric_attributes(agent, &extra));
            }
            if let Some(cost) = call.cost_usd {
                let extra = [KeyValue::new("model", call.model.to_string())];
                m.cost.add(cost, &self.metric_attributes(agent, &extra));
            }
        }
        let [input, output, cache_read, cache_creation] = call.tokens.map(|t| t as i64);
        let fields = vec![
            ("model", AnyValue::from(call.model.to_string())),
            ("cost_usd", AnyValue::from(call.cost_usd.unwrap_or(0.0))),
            ("duration_ms", AnyValue::from(call.duration_ms as i64)),
            ("input_tokens", AnyValue::from(input)),
            ("output_tokens", AnyValue::from(output)),
            ("cache_read_tokens", AnyValue::from(cache_read)),
            ("cache_creation_tokens", AnyValue::from(cache_creation)),
        ];
        self.event("api_request", agent, prompt_id, span, fields);
    }

    pub fn lines_changed(&self, agent: &str, added: u64, removed: u64) {
        if let Some(m) = &self.meters {
            for (kind, count) in [("added", added), ("removed", removed)] {
                if count > 0 {
                    let extra = [KeyValue::new("type", kind)];
                    m.lines.add(count, &self.metric_attributes(agent, &extra));
                }
            }
        }
    }

    pub fn edit_decision(
        &self,
        agent: &str,
        tool: &str,
        decision: &str,
        source: &str,
        language: Option<&str>,
    ) {
        if let Some(m) = &self.meters {
            let mut extra = vec![
                KeyValue::new("tool_name", tool.to_string()),
                KeyValue::new("decision", decision.to_string()),
                KeyValue::new("source", source.to_string()),
            ];
            if let Some(language) = language {
                extra.push(KeyValue::new("language", language.to_string()));
            }
            m.edit_decision
                .add(1, &self.metric_attributes(agent, &extra));
        }
    }
}

/// `2026-11-29T08:30:00.123Z`.
fn rfc3339(at: SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
