//! Anthropic prompt caching as the API documents it, so the fake server's usage prices a
//! client's breakpoints the way the real one would:
//!
//! - the prompt is a list of blocks in the order tools, system, messages (each tool, each
//!   system text block, each content block of each message; a string is one block);
//! - a block with `cache_control` is a breakpoint; more than [`MAX_BREAKPOINTS`] is a 400;
//! - a breakpoint reads the longest cached prefix ending at it or at one of the
//!   [`LOOKBACK`] blocks before it, and writes its own prefix when that is at least the
//!   model's minimum ([`min_tokens`]) and not read;
//! - an entry lives five minutes from its last use (an hour with `"ttl": "1h"`);
//! - an entry is readable only once the response that wrote it has begun (the server commits
//!   a request's writes when its answer starts, after any scripted delay).
//!
//! Tokens are estimated from bytes everywhere at four bytes a token: a request counts its
//! body's bytes without its `cache_control` markers ([`marker_bytes`]), a prefix the bytes of
//! its blocks' JSON without `cache_control` (plus, for the first block of each message, that
//! message's framing `{"role":…,"content":[…]}`). The usage reported is then
//! `cache_read_input_tokens` = the prefix read, `cache_creation_input_tokens` = the prefix
//! written beyond it, `input_tokens` = the rest of the request.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Breakpoints a request may carry.
pub const MAX_BREAKPOINTS: usize = 4;
/// Blocks before a breakpoint where a cached prefix is still found.
pub const LOOKBACK: usize = 20;
/// Lifetime of an entry after its last use, by default.
pub const FIVE_MINUTES: Duration = Duration::from_secs(300);
/// Lifetime with `"ttl": "1h"`.
pub const ONE_HOUR: Duration = Duration::from_secs(3600);

/// Bytes a token, for every estimate the fake server makes.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The smallest prefix the model caches: 2,048 tokens for Haiku, 1,024 for the others.
pub fn min_tokens(model: &str) -> u64 {
    if model.to_ascii_lowercase().contains("haiku") {
        2_048
    } else {
        1_024
    }
}

/// One block of the prompt as caching sees it.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// Hash of the whole prefix up to and including this block.
    pub(crate) key: u64,
    /// Tokens of that prefix.
    pub(crate) tokens: u64,
    /// The block's breakpoint lifetime, when it carries `cache_control`.
    pub(crate) breakpoint: Option<Duration>,
    /// The block's JSON without `cache_control`, as hashed; empty where only the keys were
    /// asked for ([`keys`]).
    pub(crate) text: String,
}

/// The prompt of an Anthropic request body as blocks, in caching order, with their text.
pub(crate) fn blocks(body: &Value) -> Vec<Block> {
    walk(body, true)
}

/// The blocks as [`Cache::apply`] needs them: keys, tokens and breakpoints, without building
/// each block's text (the fake server prices every request this way, so it stays cheap).
pub(crate) fn keys(body: &Value) -> Vec<Block> {
    walk(body, false)
}

fn walk(body: &Value, keep_text: bool) -> Vec<Block> {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let mut hasher = HashWriter {
        kept: keep_text.then(Vec::new),
        ..HashWriter::default()
    };
    model.hash(&mut hasher.hasher);
    let mut bytes = 0u64;
    let mut out = Vec::new();
    let mut push = |value: &Value, lead: &str, out: &mut Vec<Block>| {
        lead.hash(&mut hasher.hasher);
        let before = hasher.bytes;
        // Writing to a hasher cannot fail, nor can serializing a `Value`.
        let _ = serde_json::to_writer(&mut hasher, &Unmarked(value));
        hasher.hasher.write_u8(0xff);
        bytes += (lead.len() + hasher.bytes - before) as u64;
        out.push(Block {
            key: hasher.hasher.finish(),
            tokens: bytes.div_ceil(BYTES_PER_TOKEN),
            breakpoint: breakpoint(value),
            text: hasher.take_kept(),
        });
    };
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        push(tool, "", &mut out);
    }
    match body.get("system") {
        Some(Value::Array(parts)) => parts.iter().for_each(|p| push(p, "", &mut out)),
        Some(text @ Value::String(_)) => push(&text_block(text), "", &mut out),
        _ => {}
    }
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let framing = format!("{{\"role\":\"{role}\",\"content\":[]}},");
        match message.get("content") {
            Some(Value::Array(content)) => {
                for (i, block) in content.iter().enumerate() {
                    push(block, if i == 0 { &framing } else { "," }, &mut out);
                }
            }
            Some(text @ Value::String(_)) => push(&text_block(text), &framing, &mut out),
            _ => {}
        }
    }
    out
}

/// A hasher fed through `io::Write`, counting what it was fed (and keeping it, when asked).
#[derive(Default)]
struct HashWriter {
    hasher: DefaultHasher,
    bytes: usize,
    kept: Option<Vec<u8>>,
}

impl HashWriter {
    /// What was fed since the last call, as text; empty when nothing is kept.
    fn take_kept(&mut self) -> String {
        self.kept
            .as_mut()
            .map(|kept| String::from_utf8_lossy(&std::mem::take(kept)).into_owned())
            .unwrap_or_default()
    }
}

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.write(buf);
        self.bytes += buf.len();
        if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A block's JSON without its `cache_control` key, serialized in place (no copy of the block).
struct Unmarked<'a>(&'a Value);

impl serde::Serialize for Unmarked<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Value::Object(map) => {
                let mut out = s.serialize_map(None)?;
                for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "cache_control") {
                    out.serialize_entry(k, v)?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

/// The bytes of a body's `cache_control` markers (`,"cache_control":{…}` each): not prompt,
/// so not counted as tokens.
pub fn marker_bytes(body: &Value) -> usize {
    fn walk(v: &Value) -> usize {
        match v {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| match k.as_str() {
                    "cache_control" => ",\"cache_control\":".len() + v.to_string().len(),
                    _ => walk(v),
                })
                .sum(),
            Value::Array(items) => items.iter().map(walk).sum(),
            _ => 0,
        }
    }
    ["tools", "system", "messages"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(walk)
        .sum()
}

fn text_block(text: &Value) -> Value {
    serde_json::json!({"type": "text", "text": text})
}

/// The lifetime of the breakpoint a block carries, if it carries `cache_control`.
fn breakpoint(value: &Value) -> Option<Duration> {
    let control = value.get("cache_control")?;
    Some(match control.get("ttl").and_then(Value::as_str) {
        Some("1h") => ONE_HOUR,
        _ => FIVE_MINUTES,
    })
}

/// What a request read from and wrote to the cache, in tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheUse {
    /// Tokens read.
    pub read: u64,
    /// Tokens written.
    pub written: u64,
    /// Keys of the entries written, readable once the response begins (see [`Cache::commit`]).
    pub(crate) pending: Vec<u64>,
}

/// The server's cache: entries by prefix key.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: HashMap<u64, (Instant, Duration)>,
    /// Entries written by responses that have not begun yet: not readable.
    pending: HashMap<u64, (Instant, Duration)>,
}

impl Cache {
    /// Prices one request at `now`, reading and writing entries; an error message (a 400) when
    /// it carries too many breakpoints.
    pub(crate) fn apply(&mut self, body: &Value, now: Instant) -> Result<CacheUse, String> {
        let blocks = keys(body);
        let marked: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint.is_some())
            .collect();
        if marked.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                marked.len()
            ));
        }
        self.entries.retain(|_, (expires, _)| *expires > now);
        let mut hit: Option<usize> = None;
        for &b in &marked {
            let from = b.saturating_sub(LOOKBACK);
            if let Some(j) = (from..=b)
                .rev()
                .find(|&j| self.entries.contains_key(&blocks[j].key))
            {
                hit = hit.max(Some(j));
            }
        }
        if let Some(j) = hit {
            if let Some((expires, ttl)) = self.entries.get_mut(&blocks[j].key) {
                *expires = now + *ttl;
            }
        }
        let read = hit.map_or(0, |j| blocks[j].tokens);
        let min = min_tokens(body.get("model").and_then(Value::as_str).unwrap_or(""));
        let mut written_to = read;
        let mut pending = Vec::new();
        for &b in &marked {
            let block = &blocks[b];
            if hit.is_some_and(|j| b <= j) || block.tokens < min {
                continue;
            }
            let ttl = block.breakpoint.unwrap_or(FIVE_MINUTES);
            self.pending.insert(block.key, (now + ttl, ttl));
            pending.push(block.key);
            written_to = written_to.max(block.tokens);
        }
        Ok(CacheUse {
            read,
            written: written_to - read,
            pending,
        })
    }

    /// Makes a request's writes readable: its response has begun.
    pub(crate) fn commit(&mut self, keys: &[u64]) {
        for key in keys {
            if let Some(entry) = self.pending.remove(key) {
                self.entries.insert(*key, entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(system: &str, messages: Value) -> Value {
        json!({
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    #[test]
    fn a_second_round_reads_what_the_first_wrote() {
        let mut cache = Cache::default();
        let system = "s".repeat(8_000);
        let now = Instant::now();
        let first = body(
            &system,
            json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]),
        );
        let used = cache.apply(&first, now).unwrap_or_default();
        assert_eq!(used.read, 0);
        // Not readable before the response that wrote it begins.
        let early = body(&system, json!([{"role": "user", "content": "other"}]));
        assert_eq!(cache.apply(&early, now).map(|u| u.read), Ok(0));
        cache.commit(&used.pending);
        assert!(used.written > 2_000, "{used:?}");
        let second = body(
            &system,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]}
            ]),
        );
        let again = cache.apply(&second, now).unwrap_or_default();
        cache.commit(&again.pending);
        assert_eq!(again.read, used.written);
        assert!(again.written > 0 && again.written < 60, "{again:?}");
        // Six minutes later the entries are gone.
        let later = cache
            .apply(&second, now + Duration::from_secs(360))
            .unwrap_or_default();
        assert_eq!(later.read, 0);
    }

    #[test]
    fn short_prefixes_and_too_many_breakpoints() {
        let mut cache = Cache::default();
        let short = body("tiny", json!([{"role": "user", "content": "x"}]));
        assert_eq!(cache.apply(&short, Instant::now()), Ok(CacheUse::default()));
        let marked = json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}});
        let five = json!({"model": "m", "system": [marked, marked, marked, marked, marked], "messages": []});
        assert!(cache.apply(&five, Instant::now()).is_err());
    }
}
