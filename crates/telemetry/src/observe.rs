//! The driver's events turned into telemetry: per agent, the turn under way is one trace (an
//! interaction span, a span per model call and per tool call) and its events and counters
//! carry its `prompt.id`. A turn woken by mail that carried a trace context joins that trace.

use crate::record::{ApiRequest, Recorder};
use opentelemetry::logs::AnyValue;
use opentelemetry::trace::{Span, SpanContext, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Span as SdkSpan;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};
use troupe_agent::AgentEvent;
use troupe_driver::{Cause, Event, Failure, Observer};
use troupe_protocol::{trace_context, Usage};

/// The price of one call, when known.
pub type Pricing = Box<dyn Fn(&str, &Usage) -> Option<f64> + Send + Sync>;

/// One tool call under way.
struct Call {
    started: Instant,
    span: Option<SdkSpan>,
    /// Lines the call adds and removes, if it edits a file.
    lines: Option<(u64, u64, Option<String>)>,
    /// Why nobody was asked before it was refused.
    denied: Option<&'static str>,
    input: String,
}

/// One agent's turn under way.
struct Turn {
    prompt_id: String,
    cause: Cause,
    input: Option<String>,
    started: SystemTime,
    /// Whether its trace was opened (at its first event).
    opened: bool,
    interaction: Option<SdkSpan>,
    context: Option<SpanContext>,
    call_started: Instant,
    llm: Option<SdkSpan>,
    calls: HashMap<String, Call>,
}

/// Watches every session of the process and records it.
pub struct Watch {
    recorder: Recorder,
    pricing: Pricing,
    turns: Mutex<HashMap<String, Turn>>,
}

/// The W3C `traceparent` of a span.
fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// The span context a W3C `traceparent` names, if it is one.
fn parse_traceparent(text: &str) -> Option<SpanContext> {
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};
    let mut parts = text.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let sc = SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        SpanId::from_hex(span).ok()?,
        TraceFlags::new(u8::from_str_radix(flags, 16).ok()?),
        true,
        TraceState::default(),
    );
    sc.is_valid().then_some(sc)
}

/// Lines an edit adds and removes, and the file's language, from the call's input.
fn edit_lines(tool: &str, input: &serde_json::Value) -> Option<(u64, u64, Option<String>)> {
    let count = |key: &str| {
        input
            .get(key)
            .and_then(|v| v.as_str())
            .map(|s| s.lines().count() as u64)
    };
    let (added, removed) = match tool {
        "edit_file" => (count("new_string")?, count("old_string")?),
        "write_file" => (count("content")?, 0),
        "notebook_edit" => (count("new_source").unwrap_or(0), 0),
        _ => return None,
    };
    let language = input
        .get("path")
        .or_else(|| input.get("notebook_path"))
        .and_then(|p| p.as_str())
        .and_then(|p| std::path::Path::new(p).extension())
        .map(|e| e.to_string_lossy().into_owned());
    Some((added, removed, language))
}

fn cause_name(cause: Cause) -> &'static str {
    match cause {
        Cause::Prompt => "prompt",
        Cause::Mail => "mail",
        Cause::Background => "background",
        Cause::Follow => "follow",
    }
}

impl Watch {
    pub(crate) fn new(recorder: Recorder, pricing: Pricing) -> Watch {
        Watch {
            recorder,
            pricing,
            turns: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn child(&self, turn: &Turn, name: &'static str, attributes: Vec<KeyValue>) -> Option<SdkSpan> {
        let tracer = self.recorder.tracer.as_ref()?;
        let parent = Context::new().with_remote_span_context(turn.context.clone()?);
        Some(
            tracer
                .span_builder(name)
                .with_kind(SpanKind::Internal)
                .with_attributes(attributes)
                .start_with_context(tracer, &parent),
        )
    }

    fn start(cause: Cause, input: Option<&str>) -> Turn {
        Turn {
            prompt_id: uuid::Uuid::new_v4().to_string(),
            cause,
            input: input.map(str::to_string),
            started: SystemTime::now(),
            opened: false,
            interaction: None,
            context: None,
            call_started: Instant::now(),
            llm: None,
            calls: HashMap::new(),
        }
    }

    /// Opens the turn's trace at its first event, when the mail it woke for has been read: a
    /// teammate's first turn continues its spawner's trace, a turn woken by mail continues the
    /// trace of the mail, any other turn starts a trace of its own.
    fn open(&self, agent: &str, turn: &mut Turn) {
        if turn.opened {
            return;
        }
        turn.opened = true;
        let incoming = trace_context::take_incoming(agent);
        let parent = trace_context::take_spawned(agent)
            .or(incoming.filter(|_| turn.cause == Cause::Mail))
            .as_deref()
            .and_then(parse_traceparent);
        turn.interaction = self.recorder.tracer.as_ref().map(|tracer| {
            let parent = match parent {
                Some(sc) => Context::new().with_remote_span_context(sc),
                None => Context::new(),
            };
            let mut attributes = vec![
                KeyValue::new("session.id", self.recorder.session_id.clone()),
                KeyValue::new("prompt.id", turn.prompt_id.clone()),
                KeyValue::new("agent.name", agent.to_string()),
                KeyValue::new("troupe.cause", cause_name(turn.cause)),
            ];
            if let Some(text) = &turn.input {
                attributes.push(KeyValue::new(
                    "user_prompt_length",
                    text.chars().count() as i64,
                ));
            }
            tracer
                .span_builder("claude_code.interaction")
                .with_kind(SpanKind::Internal)
                .with_start_time(turn.started)
                .with_attributes(attributes)
                .start_with_context(tracer, &parent)
        });
        turn.context = turn.interaction.as_ref().map(|s| s.span_context().clone());
        if let Some(sc) = &turn.context {
            trace_context::set_current(agent, Some(traceparent(sc)));
        }
        if let (Some(text), true) = (&turn.input, turn.cause.has_input()) {
            self.recorder
                .user_prompt(agent, &turn.prompt_id, turn.context.as_ref(), text);
        }
        if turn.llm.is_none() {
            turn.llm = self.child(turn, "claude_code.llm_request", Vec::new());
        }
    }

    fn reply(&self, agent: &str, turn: &mut Turn, model: &str, usage: &Usage) {
        let duration_ms = turn.call_started.elapsed().as_millis() as u64;
        let tokens = [
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
        ];
        if let Some(mut span) = turn.llm.take() {
            span.set_attributes([
                KeyValue::new("model", model.to_string()),
                KeyValue::new("input_tokens", tokens[0] as i64),
                KeyValue::new("output_tokens", tokens[1] as i64),
                KeyValue::new("cache_read_tokens", tokens[2] as i64),
                KeyValue::new("cache_creation_tokens", tokens[3] as i64),
                KeyValue::new("duration_ms", duration_ms as i64),
            ]);
            span.end();
        }
        let call = ApiRequest {
            model,
            cost_usd: (self.pricing)(model, usage),
            duration_ms,
            tokens,
        };
        self.recorder
            .api_request(agent, &turn.prompt_id, turn.context.as_ref(), &call);
    }

    fn tool_started(&self, turn: &mut Turn, id: &str, name: &str, input: &serde_json::Value) {
        let span = self.child(
            turn,
            "claude_code.tool",
            vec![
                KeyValue::new("tool_name", name.to_string()),
                KeyValue::new("tool_use_id", id.to_string()),
            ],
        );
        let details = if self.recorder.log_tool_details {
            input.to_string()
        } else {
            String::new()
        };
        turn.calls.insert(
            id.to_string(),
            Call {
                started: Instant::now(),
                span,
                lines: edit_lines(name, input),
                denied: None,
                input: details,
            },
        );
    }

    fn tool_finished(
        &self,
        agent: &str,
        turn: &mut Turn,
        id: &str,
        name: &str,
        content: &str,
        is_error: bool,
    ) {
        let Some(call) = turn.calls.remove(id) else {
            return;
        };
        let duration_ms = call.started.elapsed().as_millis() as u64;
        let (decision, source) = match call.denied {
            Some(source) => ("reject", source),
            None => ("accept", "config"),
        };
        if let Some(mut span) = call.span {
            span.set_attributes([
                KeyValue::new("success", !is_error),
                KeyValue::new("duration_ms", duration_ms as i64),
                KeyValue::new("decision", decision),
            ]);
            if is_error {
                span.set_status(Status::error(first_line(content)));
            }
            span.end();
        }
        let sc = turn.context.as_ref();
        self.recorder.event(
            "tool_decision",
            agent,
            &turn.prompt_id,
            sc,
            vec![
                ("tool_name", AnyValue::from(name.to_string())),
                ("decision", AnyValue::from(decision)),
                ("source", AnyValue::from(source)),
            ],
        );
        let mut fields = vec![
            ("tool_name", AnyValue::from(name.to_string())),
            (
                "success",
                AnyValue::from(if is_error { "false" } else { "true" }),
            ),
            ("duration_ms", AnyValue::from(duration_ms as i64)),
            ("decision", AnyValue::from(decision)),
            ("source", AnyValue::from(source)),
        ];
        if is_error {
            fields.push(("error", AnyValue::from(first_line(content))));
        }
        if !call.input.is_empty() {
            fields.push(("tool_parameters", AnyValue::from(call.input)));
        }
        self.recorder
            .event("tool_result", agent, &turn.prompt_id, sc, fields);
        if let Some((added, removed, language)) = call.lines {
            self.recorder
                .edit_decision(agent, name, decision, source, language.as_deref());
            if !is_error {
                self.recorder.lines_changed(agent, added, removed);
            }
        }
    }

    fn ended(
        &self,
        agent: &str,
        mut turn: Turn,
        result: &Result<troupe_agent::TurnOutcome, Failure>,
    ) {
        if let Err(failure) = result {
            let error = failure.to_string();
            if let Failure::Agent(_) = failure {
                let duration_ms = turn.call_started.elapsed().as_millis() as i64;
                self.recorder.event(
                    "api_error",
                    agent,
                    &turn.prompt_id,
                    turn.context.as_ref(),
                    vec![
                        ("error", AnyValue::from(first_line(&error))),
                        ("duration_ms", AnyValue::from(duration_ms)),
                    ],
                );
            }
            for span in turn.llm.iter_mut().chain(turn.interaction.iter_mut()) {
                span.set_status(Status::error(first_line(&error)));
            }
        }
        for (_, call) in turn.calls.drain() {
            if let Some(mut span) = call.span {
                span.set_status(Status::error("the turn ended before the call did"));
                span.end();
            }
        }
        if let Some(mut span) = turn.llm.take() {
            span.end();
        }
        if let Some(mut span) = turn.interaction.take() {
            span.end();
        }
        trace_context::set_current(agent, None);
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(500).collect()
}

impl Observer for Watch {
    fn turn_started(&self, agent: &str, cause: Cause, input: Option<&str>) {
        let turn = Watch::start(cause, input);
        if let Ok(mut turns) = self.turns.lock() {
            turns.insert(agent.to_string(), turn);
        }
    }

    fn event(&self, agent: &str, event: &Event<'_>) {
        let Ok(mut turns) = self.turns.lock() else {
            return;
        };
        if let Event::TurnEnded(result) = event {
            if let Some(mut turn) = turns.remove(agent) {
                drop(turns);
                if turn.input.is_some() {
                    self.open(agent, &mut turn);
                }
                self.ended(agent, turn, result);
            }
            return;
        }
        let Some(turn) = turns.get_mut(agent) else {
            return;
        };
        let Event::Agent(event) = event else {
            return;
        };
        self.open(agent, turn);
        match event {
            AgentEvent::Reply { usage, model, .. } => self.reply(agent, turn, model, usage),
            AgentEvent::Retrying {
                attempt, reason, ..
            } => self.recorder.event(
                "api_error",
                agent,
                &turn.prompt_id,
                turn.context.as_ref(),
                vec![
                    ("error", AnyValue::from(first_line(reason))),
                    ("attempt", AnyValue::from(i64::from(*attempt))),
                    (
                        "duration_ms",
                        AnyValue::from(turn.call_started.elapsed().as_millis() as i64),
                    ),
                ],
            ),
            AgentEvent::ToolStarted { id, name, input } => self.tool_started(turn, id, name, input),
            AgentEvent::PermissionDenied(denial) => {
                if let Some(call) = turn.calls.get_mut(&denial.tool_use_id) {
                    call.denied = Some(denial.source.map(|s| s.as_str()).unwrap_or("user_reject"));
                }
            }
            AgentEvent::ToolFinished {
                id,
                name,
                content,
                is_error,
            } => self.tool_finished(agent, turn, id, name, content, *is_error),
            AgentEvent::ToolResults(_) | AgentEvent::MailInjected { .. } if turn.llm.is_none() => {
                turn.call_started = Instant::now();
                turn.llm = self.child(turn, "claude_code.llm_request", Vec::new());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sc = parse_traceparent(text).unwrap_or_else(|| panic!("parses"));
        assert_eq!(traceparent(&sc), text);
        assert!(parse_traceparent("00-0000-00f067aa0ba902b7-01").is_none());
        assert!(parse_traceparent("not one").is_none());
    }

    #[test]
    fn edits_count_their_lines() {
        let input =
            serde_json::json!({"path": "src/a.rs", "old_string": "a\nb", "new_string": "a\nb\nc"});
        assert_eq!(
            edit_lines("edit_file", &input),
            Some((3, 2, Some("rs".into())))
        );
        assert_eq!(edit_lines("read_file", &input), None);
    }
}
