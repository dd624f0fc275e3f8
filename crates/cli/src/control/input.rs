//! Reading the controlling process's JSON lines from stdin (`--input-format stream-json`):
//! user messages and control requests go to the session; answers to troupe's own control
//! requests (`can_use_tool`) are handed straight to whoever waits for them.

use base64::Engine;
use serde_json::Value;
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc, oneshot};
use troupe_protocol::session::Prompt;
use troupe_protocol::{ContentBlock, ImageData};

/// What the session acts on.
#[derive(Debug)]
pub enum Incoming {
    /// A user message: its text, and the images among its blocks.
    User(Prompt),
    /// A control request from the controlling process (initialize, interrupt, …).
    Control {
        /// Its id, echoed in the response.
        id: String,
        /// The request object (`subtype` and its fields).
        request: Value,
    },
}

/// The control requests troupe sent and waits on, by request id.
#[derive(Default)]
pub struct Pending(Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>);

impl Pending {
    /// Registers a request; the receiver resolves with the response, or closes when stdin does.
    pub fn register(&self, id: &str) -> oneshot::Receiver<Result<Value, String>> {
        let (tx, rx) = oneshot::channel();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), tx);
        rx
    }

    fn resolve(&self, id: &str, answer: Result<Value, String>) -> bool {
        let waiting = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// Drops every waiter (stdin closed): their receivers see the channel closed.
    fn abandon_all(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// Reads stdin on a thread of its own until it closes; the channel closes with it.
pub fn spawn_reader(pending: Arc<Pending>) -> mpsc::UnboundedReceiver<Incoming> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match parse(&line) {
                Ok(Parsed::Incoming(item)) => {
                    if tx.send(item).is_err() {
                        break;
                    }
                }
                Ok(Parsed::Response { id, answer }) => {
                    if !pending.resolve(&id, answer) {
                        tracing::warn!(id, "a control response to no pending request; ignored");
                        eprintln!(
                            "troupe: warning: control_response for unknown request '{id}' ignored"
                        );
                    }
                }
                Ok(Parsed::Ignored) => {}
                Err(why) => eprintln!("troupe: warning: stdin line ignored: {why}"),
            }
        }
        pending.abandon_all();
    });
    rx
}

/// One stdin line, understood.
#[derive(Debug)]
pub enum Parsed {
    /// For the session.
    Incoming(Incoming),
    /// The answer to one of troupe's control requests.
    Response {
        /// The request it answers.
        id: String,
        /// Its payload, or the controlling process's error.
        answer: Result<Value, String>,
    },
    /// A line with nothing to do (a keep-alive, a cancel for a request already answered).
    Ignored,
}

/// Parses one stdin line; the error says what was wrong with it.
pub fn parse(line: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    match value.get("type").and_then(Value::as_str) {
        Some("user") => {
            let content = value
                .get("message")
                .and_then(|m| m.get("content"))
                .ok_or("a user message without message.content")?;
            Ok(Parsed::Incoming(Incoming::User(content_prompt(content)?)))
        }
        Some("control_request") => {
            let id = text(&value, "request_id").ok_or("a control_request without request_id")?;
            let request = value
                .get("request")
                .cloned()
                .ok_or("a control_request without request")?;
            Ok(Parsed::Incoming(Incoming::Control { id, request }))
        }
        Some("control_response") => {
            let response = value
                .get("response")
                .ok_or("a control_response without response")?;
            let id = text(response, "request_id").ok_or("a control_response without request_id")?;
            let answer = match response.get("subtype").and_then(Value::as_str) {
                Some("error") => Err(text(response, "error").unwrap_or_default()),
                _ => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
            };
            Ok(Parsed::Response { id, answer })
        }
        Some("control_cancel_request" | "keep_alive") => Ok(Parsed::Ignored),
        Some(other) => Err(format!("unknown message type `{other}`")),
        None => Err("a message without `type`".to_string()),
    }
}

/// A user message's prompt: a string, or the text blocks of a block list (joined by newlines)
/// and its image blocks (Anthropic's `{"type":"image","source":{"type":"base64",…}}`), fitted
/// to the providers' limits. An image of another kind of source is an error saying so.
fn content_prompt(content: &Value) -> Result<Prompt, String> {
    match content {
        Value::String(text) => Ok(text.as_str().into()),
        Value::Array(blocks) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => texts.extend(block.get("text").and_then(Value::as_str)),
                    Some("image") => images.push(image(block)?),
                    _ => {}
                }
            }
            Ok(Prompt::new(texts.join("\n"), images))
        }
        _ => Err("message.content must be a string or a list of blocks".to_string()),
    }
}

/// An image block's image, downscaled when it is past the providers' limits.
fn image(block: &Value) -> Result<ImageData, String> {
    let ContentBlock::Image { source } = serde_json::from_value(block.clone())
        .map_err(|e| format!("an image block troupe cannot read ({e}): send a base64 source"))?
    else {
        return Err("an image block troupe cannot read".to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(source.data.as_bytes())
        .map_err(|e| format!("an image block whose data is not base64 ({e})"))?;
    troupe_tools::image_fit::fit(&source.media_type, &bytes)
        .map(|fitted| fitted.image)
        .map_err(|why| format!("an image block that cannot be sent: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_the_sdk_protocol_parse() {
        let user = r#"{"type":"user","session_id":"","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}"#;
        assert!(matches!(parse(user), Ok(Parsed::Incoming(Incoming::User(t))) if t.text == "hi"));
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert!(
            matches!(parse(blocks), Ok(Parsed::Incoming(Incoming::User(t))) if t.text == "a\nb")
        );
        let image = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlhAQABAAAAADs="}}]}}"#;
        let Ok(Parsed::Incoming(Incoming::User(prompt))) = parse(image) else {
            panic!("an image message did not parse");
        };
        assert_eq!(prompt.text, "see");
        assert_eq!(prompt.images[0].media_type, "image/gif");
        assert_eq!(prompt.images[0].data, "R0lGODlhAQABAAAAADs=");
        let url = r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}}"#;
        assert!(parse(url).unwrap_err().contains("base64"));
        let control =
            r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"interrupt"}}"#;
        assert!(matches!(
            parse(control),
            Ok(Parsed::Incoming(Incoming::Control { id, request })) if id == "req_1" && request["subtype"] == "interrupt"
        ));
        let ok = r#"{"type":"control_response","response":{"subtype":"success","request_id":"t1","response":{"behavior":"allow"}}}"#;
        assert!(matches!(
            parse(ok),
            Ok(Parsed::Response { id, answer: Ok(v) }) if id == "t1" && v["behavior"] == "allow"
        ));
        let err = r#"{"type":"control_response","response":{"subtype":"error","request_id":"t2","error":"boom"}}"#;
        assert!(matches!(parse(err), Ok(Parsed::Response { answer: Err(e), .. }) if e == "boom"));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        assert!(parse("{").unwrap_err().contains("not JSON"));
        assert!(parse(r#"{"type":"nope"}"#)
            .unwrap_err()
            .contains("unknown message type"));
        assert!(parse(r#"{"type":"user"}"#)
            .unwrap_err()
            .contains("message.content"));
        assert!(parse(r#"{"type":"control_request","request":{}}"#)
            .unwrap_err()
            .contains("request_id"));
    }

    #[test]
    fn a_response_reaches_its_waiter_once() {
        let pending = Pending::default();
        let mut rx = pending.register("a");
        assert!(pending.resolve("a", Ok(Value::Bool(true))));
        assert!(!pending.resolve("a", Ok(Value::Null)));
        assert_eq!(rx.try_recv().unwrap(), Ok(Value::Bool(true)));
    }
}
