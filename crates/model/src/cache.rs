//! Prompt caching: whether it is on, for how long entries live, and where a request's cache
//! breakpoints go.
//!
//! The caller marks what stays put ([`CacheMarks`]: where the system prompt's shared and
//! stable parts end); the client places Anthropic's `cache_control` breakpoints from that:
//! one at the end of each marked part of the system prompt (the tools come before it, so they
//! are covered), one on the last block of the newest message (each round reads everything
//! before it), and one on the last block of the message the previous round ended with (so a
//! round that added more than the provider's 20-block lookback still reads). Never more than
//! four, and none whose prefix is shorter than the model's minimum, estimated at
//! [`crate::estimate::BYTES_PER_TOKEN`] bytes a token.

use crate::estimate::{message_tokens, BYTES_PER_TOKEN};
use crate::ModelRequest;
use troupe_protocol::Role;

/// Claude Code's variable turning prompt caching off (`1`, `true`).
pub const DISABLE_VAR: &str = "DISABLE_PROMPT_CACHING";

/// Most breakpoints a request may carry (Anthropic refuses more).
pub const MAX_BREAKPOINTS: usize = 4;

/// How long a cache entry lives after its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    /// Five minutes, the default (writes cost 1.25× input).
    #[default]
    FiveMinutes,
    /// One hour (writes cost 2× input), for agents idle longer between rounds.
    OneHour,
}

impl CacheTtl {
    /// How long the provider keeps an entry after its last use.
    pub fn lifetime(self) -> std::time::Duration {
        match self {
            CacheTtl::FiveMinutes => std::time::Duration::from_secs(5 * 60),
            CacheTtl::OneHour => std::time::Duration::from_secs(60 * 60),
        }
    }

    /// Parses `5m` or `1h`.
    pub fn parse(text: &str) -> Option<CacheTtl> {
        match text.trim() {
            "5m" => Some(CacheTtl::FiveMinutes),
            "1h" => Some(CacheTtl::OneHour),
            _ => None,
        }
    }
}

/// Whether requests ask the provider to cache their prefixes, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptCache {
    /// On unless `DISABLE_PROMPT_CACHING` or the `promptCaching` setting turns it off.
    pub enabled: bool,
    /// How long entries live.
    pub ttl: CacheTtl,
}

impl Default for PromptCache {
    fn default() -> Self {
        PromptCache {
            enabled: true,
            ttl: CacheTtl::FiveMinutes,
        }
    }
}

impl PromptCache {
    /// Off: no request carries a breakpoint.
    pub const OFF: PromptCache = PromptCache {
        enabled: false,
        ttl: CacheTtl::FiveMinutes,
    };

    /// On by default; off when [`DISABLE_VAR`] is set to anything but `0`/`false`.
    pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> PromptCache {
        let disabled = env(DISABLE_VAR).is_some_and(|v| {
            let v = v.trim();
            !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
        });
        PromptCache {
            enabled: !disabled,
            ..PromptCache::default()
        }
    }
}

/// Where the system prompt's parts end, as byte offsets into `ModelRequest::system`
/// (`shared_end <= stable_end <= system.len()`, on char boundaries). Everything before
/// `shared_end` is the same for every agent of the same tools and workspace; everything before
/// `stable_end` stays the same for this agent's whole session (resumes and compactions
/// included); what follows may change (the date).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheMarks {
    /// End of the part agents share.
    pub shared_end: usize,
    /// End of the part that never changes in this agent's session.
    pub stable_end: usize,
}

impl CacheMarks {
    /// The marks as split points strictly inside `len`, ascending, without repeats.
    pub(crate) fn splits(&self, len: usize) -> impl Iterator<Item = usize> {
        let a = self.shared_end.min(len);
        let b = self.stable_end.min(len).max(a);
        let first = (a > 0 && a < len).then_some(a);
        let second = (b > 0 && b < len && b != a).then_some(b);
        first.into_iter().chain(second)
    }
}

/// The smallest prefix a model caches, in tokens: 2,048 for Haiku, 1,024 for the others.
pub fn min_cacheable_tokens(model: &str) -> u64 {
    if model.to_ascii_lowercase().contains("haiku") {
        2_048
    } else {
        1_024
    }
}

/// The breakpoints of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Breakpoints {
    /// System prompt pieces (as cut at the marks' splits, see [`system_pieces`]) that carry one.
    pub system: Vec<usize>,
    /// Indices of messages whose last block carries one, ascending.
    pub messages: Vec<usize>,
}

/// The system prompt cut at the marks: `(start, end)` byte ranges, none empty.
pub(crate) fn system_pieces(system: &str, marks: &CacheMarks) -> Vec<(usize, usize)> {
    let mut pieces = Vec::with_capacity(3);
    let mut start = 0;
    for split in marks.splits(system.len()) {
        if system.is_char_boundary(split) {
            pieces.push((start, split));
            start = split;
        }
    }
    if start < system.len() {
        pieces.push((start, system.len()));
    }
    pieces
}

/// Where the breakpoints of `request` go, given the tokens its tools take; empty when it asks
/// for no caching.
pub(crate) fn plan(request: &ModelRequest, tools_tokens: u64) -> Breakpoints {
    let mut out = Breakpoints::default();
    let Some(marks) = request.cache else {
        return out;
    };
    let min = min_cacheable_tokens(&request.model);
    let pieces = system_pieces(&request.system, &marks);
    let marked_ends = [marks.shared_end, marks.stable_end];
    for (i, (_, end)) in pieces.iter().enumerate() {
        let marked = marked_ends.contains(end) && *end > 0;
        let tokens = tools_tokens + (*end as u64).div_ceil(BYTES_PER_TOKEN);
        if marked && tokens >= min && out.system.len() < 2 {
            out.system.push(i);
        }
    }
    let Some(newest) = request.messages.len().checked_sub(1) else {
        return out;
    };
    // The message the previous round ended with: the last user message before the newest
    // assistant message.
    let previous = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .and_then(|a| {
            request.messages[..a]
                .iter()
                .rposition(|m| m.role == Role::User)
        });
    let system_tokens = tools_tokens + (request.system.len() as u64).div_ceil(BYTES_PER_TOKEN);
    let mut running = system_tokens;
    let mut wanted = previous.into_iter().chain([newest]).peekable();
    for (i, message) in request.messages.iter().enumerate() {
        running += message_tokens(message);
        if wanted.peek() == Some(&i) {
            wanted.next();
            if running >= min && !message.content.is_empty() {
                out.messages.push(i);
            }
        }
    }
    let room = MAX_BREAKPOINTS - out.system.len();
    if out.messages.len() > room {
        out.messages.drain(..out.messages.len() - room);
    }
    out
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
