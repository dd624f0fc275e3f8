//! One real OTLP/HTTP receiver per test binary (`sink.py`: the OpenTelemetry project's test
//! sink), and what it received, by test.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The receiver: its base URL and the file it appends each request to.
pub struct Sink {
    pub url: String,
    out: PathBuf,
    _child: Child,
    _dir: tempfile::TempDir,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// The binary's receiver, started on first use (it ends with the test process: its stdin is
/// a pipe the process holds, and it is killed by the OS when the pipe's holder goes).
pub fn sink() -> &'static Sink {
    SINK.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("received.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_support/sink.py");
        let mut child = Command::new(troupe_testkit::python::python())
            .arg(&script)
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python runs the OTLP sink (scripts/test-deps.sh installs oteltest)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the sink prints its port");
        let port: u16 = line.trim().parse().unwrap_or_else(|_| {
            panic!("the OTLP sink did not start (is oteltest installed? run scripts/test-deps.sh): {line:?}")
        });
        Sink {
            url: format!("http://127.0.0.1:{port}"),
            out,
            _child: child,
            _dir: dir,
        }
    })
}

impl Sink {
    /// Every request of `signal` whose resource has `test.case` = `case`, as received.
    pub fn received(&self, signal: &str, case: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["signal"] == signal)
            .flat_map(|v| {
                let key = match signal {
                    "traces" => "resourceSpans",
                    "metrics" => "resourceMetrics",
                    _ => "resourceLogs",
                };
                v["request"][key].as_array().cloned().unwrap_or_default()
            })
            .filter(|resource| {
                attributes(&resource["resource"]["attributes"])
                    .get("test.case")
                    .is_some_and(|v| v == case)
            })
            .collect()
    }

    /// The spans of `case`.
    pub fn spans(&self, case: &str) -> Vec<Value> {
        self.received("traces", case)
            .iter()
            .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
            .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// The log records (events) of `case`.
    pub fn events(&self, case: &str) -> Vec<Value> {
        self.received("logs", case)
            .iter()
            .flat_map(|r| r["scopeLogs"].as_array().cloned().unwrap_or_default())
            .flat_map(|s| s["logRecords"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// The metrics of `case`: each data point with its metric's name.
    pub fn points(&self, case: &str) -> Vec<(String, Value)> {
        self.received("metrics", case)
            .iter()
            .flat_map(|r| r["scopeMetrics"].as_array().cloned().unwrap_or_default())
            .flat_map(|s| s["metrics"].as_array().cloned().unwrap_or_default())
            .flat_map(|m| {
                let name = m["name"].as_str().unwrap_or_default().to_string();
                m["sum"]["dataPoints"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |p| (name.clone(), p))
            })
            .collect()
    }
}

/// OTLP's `[{"key": k, "value": {"stringValue": v}}]` as a map of plain strings (numbers as
/// their text).
pub fn attributes(list: &Value) -> std::collections::BTreeMap<String, String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|kv| {
                    let value = &kv["value"];
                    let text = value["stringValue"]
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| value["intValue"].as_str().map(str::to_string))
                        .or_else(|| value["intValue"].as_i64().map(|i| i.to_string()))
                        .or_else(|| value["doubleValue"].as_f64().map(|d| d.to_string()))
                        .or_else(|| value["boolValue"].as_bool().map(|b| b.to_string()))?;
                    Some((kv["key"].as_str()?.to_string(), text))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The value of a data point (`asInt`, a string in OTLP's JSON, or `asDouble`).
pub fn value(point: &Value) -> f64 {
    point["asInt"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| point["asInt"].as_f64())
        .or_else(|| point["asDouble"].as_f64())
        .unwrap_or(0.0)
}
