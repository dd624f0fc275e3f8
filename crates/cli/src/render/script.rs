//! What a script's run prints besides its result: team notices (stream-json lines, or text
//! on stderr with `--verbose`), and the run's events (printed as they happen with
//! stream-json, collected for `json --verbose`).

use crate::args::OutputFormat;
use crate::render::sanitize::terminal;
use crate::render::stream_json;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use troupe_team::{Notice, NoticeSink};

/// Where team notices go; the session id is filled in once setup has resolved it.
pub(crate) fn notice_sink(
    format: OutputFormat,
    verbose: bool,
    session: Arc<OnceLock<String>>,
) -> NoticeSink {
    match format {
        OutputFormat::StreamJson => Some(Arc::new(move |notice: Notice| {
            let session_id = session.get().map(String::as_str).unwrap_or("");
            let value = match notice {
                Notice::Status {
                    name,
                    status,
                    detail,
                } => {
                    json!({"type": "system", "subtype": "teammate_status", "agent": name, "status": status, "detail": detail, "session_id": session_id, "uuid": stream_json::uuid()})
                }
                Notice::Tool {
                    agent,
                    tool,
                    summary,
                } => {
                    json!({"type": "system", "subtype": "teammate_tool", "agent": agent, "tool": tool, "summary": summary, "session_id": session_id, "uuid": stream_json::uuid()})
                }
                Notice::Mail {
                    from,
                    to,
                    kind,
                    content,
                } => {
                    json!({"type": "system", "subtype": "mail", "from": from, "to": to, "kind": kind, "content": content, "session_id": session_id, "uuid": stream_json::uuid()})
                }
            };
            stream_json::emit(&value);
        })),
        OutputFormat::Text if verbose => Some(Arc::new(|notice: Notice| {
            eprintln!("{}", terminal(&super::notice::notice_line(&notice)))
        })),
        OutputFormat::Text | OutputFormat::Json => None,
    }
}

/// Where a run's events go: stream-json prints them as they happen, `json --verbose`
/// collects them for the array it prints at the end, the rest drop them.
#[derive(Clone)]
pub(crate) struct Events {
    format: OutputFormat,
    collected: Option<Arc<Mutex<Vec<Value>>>>,
}

impl Events {
    pub(crate) fn new(format: OutputFormat, verbose: bool) -> Events {
        let collected =
            (format == OutputFormat::Json && verbose).then(|| Arc::new(Mutex::new(Vec::new())));
        Events { format, collected }
    }

    /// Whether events are wanted at all.
    pub(crate) fn wanted(&self) -> bool {
        self.format == OutputFormat::StreamJson || self.collected.is_some()
    }

    pub(crate) fn push(&self, value: Value) {
        match &self.collected {
            Some(all) => all
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(value),
            None if self.format == OutputFormat::StreamJson => stream_json::emit(&value),
            None => {}
        }
    }

    /// Prints the result: one object, or with `json --verbose` the whole array ending in it.
    pub(crate) fn finish(&self, result: Value) {
        match &self.collected {
            Some(all) => {
                let mut all =
                    std::mem::take(&mut *all.lock().unwrap_or_else(PoisonError::into_inner));
                all.push(result);
                stream_json::emit(&Value::Array(all));
            }
            None => stream_json::emit(&result),
        }
    }
}
