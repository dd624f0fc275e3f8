//! Server-sent events as the MCP transports over HTTP read them: a response body's events,
//! parsed as they arrive (the legacy SSE transport's stream and a streamable HTTP response or
//! stream).

/// One server-sent event.
#[derive(Debug, PartialEq)]
pub(crate) struct Event {
    /// `event:` (`message` when absent).
    pub(crate) name: String,
    /// The `data:` lines, joined by newlines.
    pub(crate) data: String,
    /// `id:` (the last one seen), for resuming a stream.
    pub(crate) id: Option<String>,
}

/// The events of a response body, parsed as they arrive.
pub(crate) struct Events {
    response: reqwest::Response,
    /// Bytes of the line in progress (a character may be split across chunks).
    buffer: Vec<u8>,
    parser: Parser,
}

impl Events {
    pub(crate) fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            buffer: Vec::new(),
            parser: Parser::default(),
        }
    }

    /// The next event; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Result<Event, String>> {
        loop {
            if let Some(at) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=at).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(event) = self.parser.line(line.trim_end_matches(['\n', '\r'])) {
                    return Some(Ok(event));
                }
                continue;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.buffer.extend_from_slice(&bytes),
                Ok(None) => return None,
                Err(e) => return Some(Err(troupe_protocol::error_chain(&e))),
            }
        }
    }
}

/// The SSE line protocol: fields until a blank line, comments ignored.
#[derive(Default)]
pub(crate) struct Parser {
    name: Option<String>,
    data: Option<String>,
    /// The last `id:`, which stays until another replaces it.
    id: Option<String>,
}

impl Parser {
    /// Takes one line (without its end); a blank line completes the event in progress.
    pub(crate) fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let data = self.data.take();
            let name = self.name.take();
            return data.map(|data| Event {
                name: name.unwrap_or_else(|| "message".to_string()),
                data,
                id: self.id.clone(),
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.name = Some(value.to_string()),
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_events() {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for line in [
            ": a comment",
            "event: endpoint",
            "data: /message?sessionId=1",
            "",
            "id: 7",
            "data: {\"a\":",
            "data: 1}",
            "",
            "",
        ] {
            events.extend(parser.line(line));
        }
        assert_eq!(
            events,
            [
                Event {
                    name: "endpoint".into(),
                    data: "/message?sessionId=1".into(),
                    id: None,
                },
                Event {
                    name: "message".into(),
                    data: "{\"a\":\n1}".into(),
                    id: Some("7".into()),
                },
            ]
        );
    }
}
