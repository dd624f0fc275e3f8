//! Request bodies written straight to bytes, once per call: the fixed fields and the
//! conversation serialised from the request as they are (no `Value` tree built and then
//! serialised again), and the `tools` array — the same for every call of every agent offering
//! the same tool set — serialised once per shared set and spliced in.

use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use serde::Serialize;

use crate::ToolSpec;

/// Tool sets whose JSON is kept; agents share a handful of sets (see `ModelRequest::tools`).
const KEPT_SETS: usize = 8;

/// The serialised `tools` of recently used tool sets, by identity of the shared set. A set is
/// held weakly: while an entry lives, its allocation cannot be reused by another set, so the
/// same address always means the same tools.
#[derive(Debug, Default)]
pub(crate) struct ToolsJson {
    kept: Mutex<Vec<(Weak<[ToolSpec]>, Bytes)>>,
}

impl ToolsJson {
    /// The JSON array of `tools`, from `build` the first time this set is seen.
    pub(crate) fn get(
        &self,
        tools: &Arc<[ToolSpec]>,
        build: impl FnOnce(&[ToolSpec]) -> Result<Vec<u8>, serde_json::Error>,
    ) -> Result<Bytes, serde_json::Error> {
        let ptr = Arc::as_ptr(tools);
        // A poisoned lock only means another caller panicked mid-update of a cache.
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = kept
            .iter()
            .position(|(set, _)| std::ptr::eq(set.as_ptr(), ptr))
        {
            let entry = kept.remove(i);
            let json = entry.1.clone();
            kept.insert(0, entry);
            return Ok(json);
        }
        let json = Bytes::from(build(tools)?);
        kept.retain(|(set, _)| set.strong_count() > 0);
        kept.truncate(KEPT_SETS - 1);
        kept.insert(0, (Arc::downgrade(tools), json.clone()));
        Ok(json)
    }
}

/// `head` serialised, with `extra` (`"key":value` pairs, comma-separated, without braces)
/// spliced in as its last fields. `head` must serialise to a JSON object.
pub(crate) fn object_with(
    head: &impl Serialize,
    extra: &[(&str, &[u8])],
) -> Result<Bytes, serde_json::Error> {
    let extra_len: usize = extra.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut out = serde_json::to_vec(head)?;
    out.reserve(extra_len);
    if out.pop() != Some(b'}') {
        return Err(serde::ser::Error::custom(
            "a request body must be a JSON object",
        ));
    }
    for (key, value) in extra {
        if out.len() > 1 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, key)?;
        out.push(b':');
        out.extend_from_slice(value);
    }
    out.push(b'}');
    Ok(Bytes::from(out))
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
