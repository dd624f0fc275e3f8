//! What a test scripts the fake server to answer: steps, replies and faults.

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use troupe_protocol::Usage;

use crate::recorded::Recorded;

/// Which wire format a request arrived in (chosen by the request path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// Anthropic Messages (`…/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`…/chat/completions`).
    OpenAi,
    /// The OpenAI Responses API (`…/responses`): Codex CLI's wire, for the comparison bench.
    Responses,
}

/// One scripted answer to one model request of an agent.
pub enum Step {
    /// Answer with a fixed reply.
    Reply(Reply),
    /// Build the reply from the incoming request (e.g. to echo a request id it carries).
    Dynamic(Box<dyn Fn(&Recorded) -> Reply + Send + Sync>),
    /// Fail the request in a scripted way.
    Fault(Fault),
    /// Wait before answering with the inner step (for interrupt and kill tests).
    Delay(Duration, Box<Step>),
    /// Answer with the inner step, pausing after every streamed event: slow but progressing.
    Paced(Duration, Box<Step>),
}

impl Step {
    /// A step answering with `r`.
    pub fn reply(r: Reply) -> Step {
        Step::Reply(r)
    }

    /// A step answering with one text block.
    pub fn text(s: &str) -> Step {
        Step::Reply(Reply::text(s))
    }

    /// A step answering with one tool call.
    pub fn tool(name: &str, input: Value) -> Step {
        Step::Reply(Reply::tool(name, input))
    }

    /// A step whose reply is computed from the request it answers.
    pub fn dynamic(f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Step {
        Step::Dynamic(Box::new(f))
    }

    /// A step failing the request with `f`.
    pub fn fault(f: Fault) -> Step {
        Step::Fault(f)
    }

    /// A step that waits `d` before answering with `step`.
    pub fn delay(d: Duration, step: Step) -> Step {
        Step::Delay(d, Box::new(step))
    }

    /// A step that streams `step`'s answer with a pause of `gap` after every event.
    pub fn paced(gap: Duration, step: Step) -> Step {
        Step::Paced(gap, Box::new(step))
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Reply(r) => f.debug_tuple("Reply").field(r).finish(),
            Step::Dynamic(_) => f.write_str("Dynamic(..)"),
            Step::Fault(x) => f.debug_tuple("Fault").field(x).finish(),
            Step::Delay(d, s) => f.debug_tuple("Delay").field(d).field(s).finish(),
            Step::Paced(d, s) => f.debug_tuple("Paced").field(d).field(s).finish(),
        }
    }
}

/// One content block of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBlock {
    /// Extended thinking (Anthropic `thinking` + signature; OpenAI `reasoning_content`).
    Thinking(String),
    /// Thinking the provider redacted: Anthropic's `redacted_thinking` with this opaque
    /// `data` (the OpenAI wire has no such thing and leaves it out).
    RedactedThinking(String),
    /// Plain text.
    Text(String),
    /// A tool call; the server assigns a unique id when it plays the reply.
    Tool {
        /// Tool name.
        name: String,
        /// Tool input object.
        input: Value,
    },
}

impl ReplyBlock {
    /// True for thinking, redacted or not (streamed before every other block).
    fn is_thinking(&self) -> bool {
        matches!(
            self,
            ReplyBlock::Thinking(_) | ReplyBlock::RedactedThinking(_)
        )
    }
}

/// Why the scripted reply stops, when the default (tool_use if it calls tools, else end_turn)
/// is not wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished (`end_turn` / `stop`).
    EndTurn,
    /// The model wants tools run (`tool_use` / `tool_calls`).
    ToolUse,
    /// The output hit the token limit (`max_tokens` / `length`).
    MaxTokens,
    /// A stop sequence matched (`stop_sequence` / `stop`).
    StopSequence,
}

/// A scripted model reply: its blocks in order, an optional stop reason and usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The content blocks, in the order they are streamed.
    pub blocks: Vec<ReplyBlock>,
    /// Overrides the derived stop reason.
    pub stop: Option<StopReason>,
    /// Overrides the estimated usage (input from the request size, output from the reply size).
    pub usage: Option<Usage>,
}

impl Reply {
    /// A reply holding one text block.
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::default().with_text(s)
    }

    /// A reply holding one tool call.
    pub fn tool(name: impl Into<String>, input: Value) -> Reply {
        Reply::default().with_tool(name, input)
    }

    /// Appends a text block.
    pub fn with_text(mut self, s: impl Into<String>) -> Reply {
        self.blocks.push(ReplyBlock::Text(s.into()));
        self
    }

    /// Appends a tool call.
    pub fn with_tool(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.blocks.push(ReplyBlock::Tool {
            name: name.into(),
            input,
        });
        self
    }

    /// Adds a thinking block; it goes after any earlier thinking but before every other block,
    /// because the real API always streams thinking first.
    pub fn with_thinking(mut self, s: impl Into<String>) -> Reply {
        let at = self
            .blocks
            .iter()
            .position(|b| !b.is_thinking())
            .unwrap_or(self.blocks.len());
        self.blocks.insert(at, ReplyBlock::Thinking(s.into()));
        self
    }

    /// Adds a redacted thinking block, placed as [`Reply::with_thinking`] places thinking.
    pub fn with_redacted_thinking(mut self, data: impl Into<String>) -> Reply {
        let at = self
            .blocks
            .iter()
            .position(|b| !b.is_thinking())
            .unwrap_or(self.blocks.len());
        self.blocks
            .insert(at, ReplyBlock::RedactedThinking(data.into()));
        self
    }

    /// Marks the reply as cut off by the output limit (`max_tokens` / `length`).
    pub fn stop_max_tokens(self) -> Reply {
        self.with_stop(StopReason::MaxTokens)
    }

    /// Sets the stop reason explicitly.
    pub fn with_stop(mut self, stop: StopReason) -> Reply {
        self.stop = Some(stop);
        self
    }

    /// Sets the reported input and output tokens.
    pub fn usage(mut self, input: u64, output: u64) -> Reply {
        let mut u = self.usage.unwrap_or_default();
        u.input_tokens = input;
        u.output_tokens = output;
        self.usage = Some(u);
        self
    }

    /// Sets the reported prompt-cache tokens (read from and written to the cache).
    pub fn cache_usage(mut self, read: u64, creation: u64) -> Reply {
        let mut u = self.usage.unwrap_or_default();
        u.cache_read_input_tokens = read;
        u.cache_creation_input_tokens = creation;
        self.usage = Some(u);
        self
    }

    /// True when the reply calls at least one tool.
    pub fn has_tool(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, ReplyBlock::Tool { .. }))
    }

    /// The stop reason the server reports: the override, else tool_use when tools are called,
    /// else end_turn.
    pub fn stop_reason(&self) -> StopReason {
        match self.stop {
            Some(s) => s,
            None if self.has_tool() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        }
    }

    /// The usage reported for this reply to a request body of `request_bytes` bytes of which
    /// `cached` was read from or written to the cache: the scripted one, or the estimate with
    /// the cached part split off `input_tokens`.
    pub(crate) fn usage_with_cache(
        &self,
        request_bytes: usize,
        cached: crate::cache::CacheUse,
    ) -> Usage {
        if self.usage.is_some() {
            return self.usage_for(request_bytes);
        }
        let mut usage = self.usage_for(request_bytes);
        let cached_total = cached.read + cached.written;
        usage.input_tokens = usage.input_tokens.saturating_sub(cached_total);
        usage.cache_read_input_tokens = cached.read;
        usage.cache_creation_input_tokens = cached.written;
        usage
    }

    /// The usage reported for this reply to a request body of `request_bytes` bytes: the
    /// scripted one, or a rough estimate (four bytes a token) so totals grow like real ones.
    pub(crate) fn usage_for(&self, request_bytes: usize) -> Usage {
        if let Some(u) = self.usage {
            return u;
        }
        let output_bytes: usize = self
            .blocks
            .iter()
            .map(|b| match b {
                ReplyBlock::Thinking(s) | ReplyBlock::Text(s) | ReplyBlock::RedactedThinking(s) => {
                    s.len()
                }
                ReplyBlock::Tool { name, input } => name.len() + input.to_string().len(),
            })
            .sum();
        Usage {
            input_tokens: (request_bytes as u64).div_ceil(4),
            output_tokens: (output_bytes as u64).div_ceil(4) + 1,
            ..Usage::default()
        }
    }
}

/// A scripted failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An HTTP error status, e.g. 429 with Retry-After, 500, 400, 401. A `body` that is JSON is
    /// sent verbatim; any other text becomes the message of the wire's usual error object.
    Status {
        /// HTTP status code.
        code: u16,
        /// Seconds for the `retry-after` header, when set.
        retry_after: Option<u64>,
        /// Response body (JSON verbatim, or an error message to wrap).
        body: String,
    },
    /// Anthropic: 529 `overloaded_error`; OpenAI: 503.
    Overloaded,
    /// A 200 stream that sends its headers and first events, then drops the connection.
    DisconnectMidStream,
    /// A 200 stream carrying an event whose data is not valid JSON, then the end of the stream.
    MalformedEvent,
    /// Anthropic: 400 "prompt is too long"; OpenAI: 400 with code `context_length_exceeded`.
    PromptTooLong,
    /// A 200 stream that starts normally, then carries an error event (Anthropic `event: error`
    /// with `overloaded_error`; OpenAI a `data: {"error": …}` chunk) and ends.
    ErrorEvent,
    /// A 200 stream that stalls: after its opening (Anthropic `message_start`; OpenAI nothing)
    /// it sends only keep-alives — Anthropic `ping` events, OpenAI SSE comments — `count` of
    /// them, `every` apart, then ends without a response.
    KeepAliveOnly {
        /// The pause between keep-alives.
        every: Duration,
        /// How many keep-alives before the stream ends.
        count: u32,
    },
}

impl Fault {
    /// A plain error status with a generic message.
    pub fn status(code: u16) -> Fault {
        Fault::Status {
            code,
            retry_after: None,
            body: format!("fake server: scripted status {code}"),
        }
    }

    /// A 429 rate limit asking the client to retry after `secs` seconds.
    pub fn rate_limited(secs: u64) -> Fault {
        Fault::Status {
            code: 429,
            retry_after: Some(secs),
            body: "fake server: rate limited".into(),
        }
    }
}
