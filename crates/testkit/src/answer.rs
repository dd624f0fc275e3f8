//! A rendered HTTP answer and the response body that plays it, flushes included.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use serde_json::Value;

/// One step of a response body as it goes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Bytes to send.
    Data(Bytes),
    /// Push what was sent so far onto the socket before going on, so the client reads the
    /// stream in pieces (and a following abort cannot swallow it).
    Flush,
    /// Drop the connection without finishing the response.
    Abort,
    /// Wait this long before going on (a slow or stalled server).
    Sleep(Duration),
}

/// A complete scripted HTTP answer: status, extra headers, body chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// HTTP status code.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body, in order.
    pub body: Vec<Chunk>,
    /// Sent chunked, as a stream, even when the body is one piece.
    pub streamed: bool,
}

impl Answer {
    /// A JSON answer with a Content-Length body.
    pub fn json(status: u16, value: &Value) -> Answer {
        Answer {
            status,
            headers: vec![("content-type", "application/json".to_string())],
            body: vec![Chunk::Data(Bytes::from(value.to_string()))],
            streamed: false,
        }
    }

    /// A 200 server-sent-events answer with the given chunks (sent chunked).
    pub fn sse(body: Vec<Chunk>) -> Answer {
        Answer {
            status: 200,
            headers: vec![
                (
                    "content-type",
                    "text/event-stream; charset=utf-8".to_string(),
                ),
                ("cache-control", "no-cache".to_string()),
            ],
            body,
            streamed: true,
        }
    }

    /// A scripted error status: `body` as sent when it is JSON, else the wire's error object
    /// (`error_body` of the status and `body` as message), with `Retry-After` when given.
    pub fn status_fault(
        code: u16,
        retry_after: Option<u64>,
        body: &str,
        error_body: impl FnOnce(u16, &str) -> Value,
    ) -> Answer {
        let value = serde_json::from_str::<Value>(body).unwrap_or_else(|_| error_body(code, body));
        let answer = Answer::json(code, &value);
        match retry_after {
            Some(secs) => answer.with_header("retry-after", secs.to_string()),
            None => answer,
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &'static str, value: String) -> Answer {
        self.headers.push((name, value));
        self
    }

    /// The same answer in one piece when nothing in it waits: its data joined, its flushes
    /// dropped (an abort stays last, after a flush). An answer with a pause is left as it is.
    pub fn whole(mut self) -> Answer {
        if self.body.iter().any(|c| matches!(c, Chunk::Sleep(_))) {
            return self;
        }
        let mut data = Vec::new();
        let mut abort = false;
        for chunk in &self.body {
            match chunk {
                Chunk::Data(b) => data.extend_from_slice(b),
                Chunk::Abort => abort = true,
                Chunk::Flush | Chunk::Sleep(_) => {}
            }
        }
        self.body = vec![Chunk::Data(Bytes::from(data))];
        if abort {
            self.body.extend([Chunk::Flush, Chunk::Abort]);
        }
        self
    }

    /// The same answer with a pause of `gap` after every flushed piece: a stream that is slow
    /// but keeps making progress.
    pub fn paced(mut self, gap: Duration) -> Answer {
        let mut body = Vec::with_capacity(self.body.len() * 2);
        for chunk in self.body {
            let flush = chunk == Chunk::Flush;
            body.push(chunk);
            if flush {
                body.push(Chunk::Sleep(gap));
            }
        }
        self.body = body;
        self
    }
}

/// Builds SSE chunks, flushing after every event so the client sees them arrive one by one.
#[derive(Debug, Default)]
pub(crate) struct SseWriter {
    chunks: Vec<Chunk>,
}

impl SseWriter {
    /// Appends a named event (`event: …` + `data: …`).
    pub fn event(&mut self, name: &str, data: &Value) {
        self.raw(format!("event: {name}\ndata: {data}\n\n"));
    }

    /// Appends an unnamed `data: …` event.
    pub fn data(&mut self, data: &Value) {
        self.raw(format!("data: {data}\n\n"));
    }

    /// Appends raw text as one event, then flushes.
    pub fn raw(&mut self, text: String) {
        self.chunks.push(Chunk::Data(Bytes::from(text)));
        self.chunks.push(Chunk::Flush);
    }

    /// Appends a named event split into two writes in the middle of its data line, to exercise
    /// a client's handling of events cut across reads.
    pub fn event_split(&mut self, name: &str, data: &Value) {
        let text = format!("event: {name}\ndata: {data}\n\n");
        let mut cut = text.len() / 2;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.chunks
            .push(Chunk::Data(Bytes::copy_from_slice(&text.as_bytes()[..cut])));
        self.chunks.push(Chunk::Flush);
        self.chunks
            .push(Chunk::Data(Bytes::copy_from_slice(&text.as_bytes()[cut..])));
        self.chunks.push(Chunk::Flush);
    }

    /// Waits `d` before the next chunk.
    pub fn sleep(&mut self, d: Duration) {
        self.chunks.push(Chunk::Sleep(d));
    }

    /// Ends by dropping the connection instead of finishing the response.
    pub fn abort(mut self) -> Vec<Chunk> {
        self.chunks.push(Chunk::Abort);
        self.chunks
    }

    /// Ends the response normally.
    pub fn finish(self) -> Vec<Chunk> {
        self.chunks
    }
}

/// The hyper body that plays an answer's chunks.
pub(crate) struct ScriptedBody {
    chunks: VecDeque<Chunk>,
    exact_len: Option<u64>,
    /// The pause in progress, if any.
    sleeping: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl std::fmt::Debug for ScriptedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedBody")
            .field("chunks", &self.chunks)
            .field("exact_len", &self.exact_len)
            .field("sleeping", &self.sleeping.is_some())
            .finish()
    }
}

impl ScriptedBody {
    /// A body playing `chunks`; a single data chunk that is not `streamed` gets a
    /// Content-Length, anything else is sent chunked, like a real stream.
    pub fn new(chunks: Vec<Chunk>, streamed: bool) -> ScriptedBody {
        let exact_len = match chunks.as_slice() {
            _ if streamed => None,
            [Chunk::Data(b)] => Some(b.len() as u64),
            [] => Some(0),
            _ => None,
        };
        ScriptedBody {
            chunks: chunks.into(),
            exact_len,
            sleeping: None,
        }
    }
}

impl Body for ScriptedBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(sleep) = this.sleeping.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.sleeping = None;
            }
            match this.chunks.front() {
                Some(Chunk::Sleep(d)) => {
                    this.sleeping = Some(Box::pin(tokio::time::sleep(*d)));
                    this.chunks.pop_front();
                }
                _ => break,
            }
        }
        match this.chunks.pop_front() {
            None | Some(Chunk::Sleep(_)) => Poll::Ready(None),
            Some(Chunk::Data(b)) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Some(Chunk::Flush) => {
                // Returning Pending makes hyper flush its write buffer to the socket before it
                // polls us again; the wake makes that next poll come at once.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Chunk::Abort) => Poll::Ready(Some(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "fake server: scripted disconnect",
            )))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && self.sleeping.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact_len {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
