//! An incremental Server-Sent-Events parser: raw bytes in, whole events out.
//!
//! Bytes are buffered until a full line is available and only complete lines are decoded as
//! UTF-8, so a network chunk may end anywhere — inside a line, between `\r` and `\n`, or in the
//! middle of a multi-byte character — without corrupting the text.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser state; feed it chunks with [`SseParser::push`].
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, still incomplete line.
    pending: Vec<u8>,
    /// The previous chunk ended in `\r`; a leading `\n` in the next chunk belongs to it.
    after_cr: bool,
    /// The `event:` field of the event being built.
    event: Option<String>,
    /// The `data:` lines of the event being built, each followed by `\n`.
    data: String,
    /// Whether any `data:` line was seen for the event being built (data may be empty).
    has_data: bool,
    /// Whether the first line has been seen (a leading byte-order mark is dropped).
    started: bool,
}

impl SseParser {
    /// A parser with no buffered input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk of bytes and returns every event it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if let Some((b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.pending.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.pending);
            if let Some(event) = self.process_line(&line) {
                events.push(event);
            }
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.split_first() {
                    Some((b'\n', tail)) => rest = tail,
                    Some(_) => {}
                    // The `\n` of a `\r\n` pair may arrive in the next chunk.
                    None => self.after_cr = true,
                }
            }
        }
        self.pending.extend_from_slice(rest);
        events
    }

    /// Ends the input: completes a last line without terminator and dispatches an event that
    /// was not followed by a blank line (servers that close the connection right after it).
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.after_cr = false;
        let mut out = None;
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            out = self.process_line(&line);
        }
        out.or_else(|| self.dispatch())
    }

    /// Interprets one complete line; returns an event when the line is blank.
    fn process_line(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            raw = raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw);
        }
        if raw.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(raw);
        if line.starts_with(':') {
            return None; // comment, often used as a keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            // `id` and `retry` matter only to browsers that reconnect on their own.
            _ => {}
        }
        None
    }

    /// Emits the event built so far, if it has data, and resets for the next one.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            // Per the SSE spec an event without data is not dispatched.
            return None;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = parser.push(input);
        out.extend(parser.finish());
        out
    }

    /// Splits the input at every possible pair of positions and checks the result is the same.
    fn assert_split_invariant(input: &[u8], expected: &[SseEvent]) {
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let mut parser = SseParser::new();
                let mut out = parser.push(&input[..i]);
                out.extend(parser.push(&input[i..j]));
                out.extend(parser.push(&input[j..]));
                out.extend(parser.finish());
                assert_eq!(out, expected, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn parses_named_events_with_lf() {
        let input = b"event: ping\ndata: {\"a\":1}\n\nevent: stop\ndata: x\n\n";
        assert_eq!(
            parse_all(input),
            vec![ev(Some("ping"), "{\"a\":1}"), ev(Some("stop"), "x")]
        );
    }

    #[test]
    fn parses_crlf_and_lone_cr_terminators() {
        let input = b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n";
        assert_eq!(
            parse_all(input),
            vec![ev(Some("a"), "1"), ev(None, "2"), ev(None, "3")]
        );
    }

    #[test]
    fn joins_multi_line_data_with_newlines() {
        let input = b"data: first\ndata:second\ndata:  third\n\n";
        assert_eq!(parse_all(input), vec![ev(None, "first\nsecond\n third")]);
    }

    #[test]
    fn skips_comments_and_unknown_fields() {
        let input = b": keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n:\n\n";
        assert_eq!(parse_all(input), vec![ev(None, "x")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_does_not_leak_its_name() {
        let input = b"event: lonely\n\ndata: y\n\n";
        assert_eq!(parse_all(input), vec![ev(None, "y")]);
    }

    #[test]
    fn empty_data_line_dispatches_an_empty_event() {
        assert_eq!(parse_all(b"data\n\n"), vec![ev(None, "")]);
        assert_eq!(parse_all(b"data:\n\n"), vec![ev(None, "")]);
    }

    #[test]
    fn finish_flushes_an_unterminated_last_event() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: [DONE]").is_empty());
        assert_eq!(parser.finish(), Some(ev(None, "[DONE]")));
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn strips_a_leading_byte_order_mark() {
        let input = "\u{feff}data: x\n\n".as_bytes();
        assert_eq!(parse_all(input), vec![ev(None, "x")]);
    }

    #[test]
    fn any_chunking_gives_the_same_events() {
        let input = "event: content_block_delta\r\ndata: {\"text\":\"héllo — 世界 🎭\"}\r\n\r\n: ping\n\ndata: a\ndata: b\r\n\r\n";
        let expected = vec![
            ev(
                Some("content_block_delta"),
                "{\"text\":\"héllo — 世界 🎭\"}",
            ),
            ev(None, "a\nb"),
        ];
        assert_split_invariant(input.as_bytes(), &expected);
    }

    #[test]
    fn byte_at_a_time_keeps_multibyte_characters_whole() {
        let input = "data: 🎭ü\r\n\r\n".as_bytes();
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for b in input {
            out.extend(parser.push(std::slice::from_ref(b)));
        }
        out.extend(parser.finish());
        assert_eq!(out, vec![ev(None, "🎭ü")]);
    }
}
