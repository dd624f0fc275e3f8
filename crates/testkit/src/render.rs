//! Turns a step into an HTTP answer in the request's wire format.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::answer::Answer;
use crate::recorded::Recorded;
use crate::script::{Fault, Reply, Wire};
use crate::{anthropic, openai, responses};

/// The server-wide counter behind every id it hands out (tool calls, messages, signatures).
#[derive(Debug, Default)]
pub(crate) struct Ids(AtomicU64);

impl Ids {
    /// The next number, unique for this server.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Splits `s` into at most `n` non-empty pieces of about equal length, on char boundaries.
pub(crate) fn pieces(s: &str, n: usize) -> Vec<&str> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let n = n.clamp(1, chars.len().max(1));
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for k in 1..=n {
        let end = if k == n {
            s.len()
        } else {
            chars[chars.len() * k / n].0
        };
        if end > start {
            out.push(&s[start..end]);
            start = end;
        }
    }
    out
}

/// The reply rendered for the request's wire.
pub(crate) fn reply(
    rec: &Recorded,
    r: &Reply,
    ids: &Ids,
    request_bytes: (usize, crate::cache::CacheUse),
) -> Answer {
    match rec.wire {
        Wire::Anthropic => anthropic::reply(rec, r, ids, request_bytes),
        Wire::OpenAi => openai::reply(rec, r, ids, request_bytes),
        Wire::Responses => responses::reply(rec, r, ids, request_bytes),
    }
}

/// The fault rendered for the request's wire.
pub(crate) fn fault(rec: &Recorded, f: &Fault, ids: &Ids) -> Answer {
    match rec.wire {
        Wire::Anthropic => anthropic::fault(rec, f, ids),
        Wire::OpenAi => openai::fault(rec, f, ids),
        Wire::Responses => responses::fault(rec, f, ids),
    }
}

/// The provider's own refusal of a prompt of `tokens` tokens, larger than the `limit`.
pub(crate) fn too_long(wire: Wire, tokens: u64, limit: u64) -> Answer {
    match wire {
        Wire::Anthropic => anthropic::too_long(tokens, limit),
        Wire::OpenAi => openai::too_long(tokens, limit),
        Wire::Responses => responses::too_long(tokens, limit),
    }
}

/// A non-retriable 400 carrying the harness's own complaint, so a broken test fails loudly.
pub(crate) fn harness_error(wire: Wire, message: &str) -> Answer {
    match wire {
        Wire::Anthropic => anthropic::error(400, message),
        Wire::OpenAi | Wire::Responses => openai::error(400, message),
    }
}

/// Runs a script closure (a dynamic step or the fallback); a panic — typically a failed
/// assertion inside the script — becomes a 400 naming it instead of a silently dropped
/// connection.
pub(crate) fn guarded<T>(rec: &Recorded, f: impl FnOnce() -> T) -> Result<T, Answer> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        harness_error(
            rec.wire,
            &format!(
                "fake server: script for agent '{}' panicked: {what}",
                rec.agent
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_rejoin_to_the_input_and_are_never_empty() {
        for s in [
            "",
            "a",
            "ab",
            "hello world",
            "héllo wörld ünïcode",
            "{\"a\":1}",
        ] {
            for n in 1..6 {
                let p = pieces(s, n);
                assert_eq!(p.concat(), s);
                assert!(p.iter().all(|x| !x.is_empty()));
                assert!(p.len() <= n);
            }
        }
        assert_eq!(pieces("abcdefgh", 4), vec!["ab", "cd", "ef", "gh"]);
    }
}
