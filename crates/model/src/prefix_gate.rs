//! Agents that share a cacheable prefix take turns the first time: when several agents of one
//! tool set start at once (a team's teammates, subagents), the first request with a given
//! shared prefix goes alone, and the others follow as soon as its response has begun — the
//! provider makes an entry readable only then — so they read the prefix it wrote instead of
//! all writing it. After that, requests with the prefix pass straight through — for as long
//! as the provider keeps the entry (its lifetime from its last use): a prefix unused for
//! longer is gated once more, since the next request writes it again.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::ModelRequest;

/// Longest a request waits for the first one's response to begin.
const MOST_WAIT: Duration = Duration::from_secs(30);

/// Shared prefixes kept before the oldest are forgotten (a forgotten one is gated once more).
const KEPT: usize = 256;

#[derive(Debug)]
enum Prefix {
    /// Its first request is on its way; the sender says `true` once its response began.
    Writing(watch::Receiver<bool>),
    /// Written, and last used then: requests pass while the entry lives.
    Warm(Instant),
}

/// The prefixes seen by one shared client.
#[derive(Debug)]
pub(crate) struct PrefixGate {
    prefixes: Mutex<HashMap<u64, Prefix>>,
    /// How long the provider keeps an entry after its last use.
    lifetime: Duration,
}

/// What a request must do before it goes.
pub(crate) enum Turn {
    /// Go now.
    Go,
    /// Go now, and say when the response began ([`Writer::begun`]): the others wait for it.
    Write(Writer),
}

/// The first request of a prefix, releasing the others when its response begins.
pub(crate) struct Writer {
    key: u64,
    gate: Arc<PrefixGate>,
    tx: watch::Sender<bool>,
}

impl Writer {
    /// The response began (or the call ended): the others may go; the prefix is warm.
    pub(crate) fn begun(&self) {
        if !*self.tx.borrow() {
            let _ = self.tx.send(true);
            self.gate
                .lock()
                .insert(self.key, Prefix::Warm(Instant::now()));
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // A call that failed or was dropped still releases the ones waiting.
        self.begun();
    }
}

impl PrefixGate {
    /// A gate for entries that live `lifetime` after their last use.
    pub(crate) fn new(lifetime: Duration) -> PrefixGate {
        PrefixGate {
            prefixes: Mutex::new(HashMap::new()),
            lifetime,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Prefix>> {
        self.prefixes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits, if another request is writing this request's shared prefix, until its response
    /// began; says whether this request is the one to write it.
    pub(crate) async fn turn(self: &Arc<Self>, request: &ModelRequest) -> Turn {
        let Some(key) = key(request) else {
            return Turn::Go;
        };
        let mut waiting = {
            let mut prefixes = self.lock();
            let now = Instant::now();
            match prefixes.get_mut(&key) {
                Some(Prefix::Warm(used)) if now.duration_since(*used) < self.lifetime => {
                    *used = now;
                    return Turn::Go;
                }
                Some(Prefix::Writing(rx)) => rx.clone(),
                // New, or expired at the provider: this request writes it again.
                _ => {
                    if prefixes.len() >= KEPT {
                        prefixes.retain(|_, p| matches!(p, Prefix::Writing(_)));
                    }
                    let (tx, rx) = watch::channel(false);
                    prefixes.insert(key, Prefix::Writing(rx));
                    return Turn::Write(Writer {
                        key,
                        gate: Arc::clone(self),
                        tx,
                    });
                }
            }
        };
        // A closed channel or the deadline: go anyway; the cache is an optimisation.
        let _ = tokio::time::timeout(MOST_WAIT, waiting.wait_for(|begun| *begun)).await;
        Turn::Go
    }
}

/// The shared prefix a request starts with: its model, its tool set and the part of its system
/// prompt agents share; `None` for a request not worth caching or without a shared part.
fn key(request: &ModelRequest) -> Option<u64> {
    let marks = request.cache?;
    let shared = request.system.get(..marks.shared_end)?;
    if shared.is_empty() {
        return None;
    }
    let mut hasher = DefaultHasher::new();
    request.model.hash(&mut hasher);
    // Agents of one tool set share one interned spec set, so its address names it; equal
    // sets held apart hash alike by content too.
    for tool in request.tools.iter() {
        tool.name.hash(&mut hasher);
        tool.description.len().hash(&mut hasher);
    }
    shared.hash(&mut hasher);
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CacheMarks;
    use troupe_protocol::ChatMessage;

    fn request(system: &str, shared_end: usize) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: system.into(),
            messages: vec![ChatMessage::user_text("hi")],
            tools: Vec::<crate::ToolSpec>::new().into(),
            max_tokens: 1,
            agent: "a".into(),
            cache: Some(CacheMarks {
                shared_end,
                stable_end: system.len(),
            }),
        }
    }

    #[tokio::test]
    async fn the_first_writes_the_others_wait_until_its_response_begins() {
        let gate = Arc::new(PrefixGate::new(Duration::from_secs(300)));
        let Turn::Write(writer) = gate.turn(&request("SHARED alice", 6)).await else {
            panic!("the first request writes");
        };
        let waiting = {
            let gate = gate.clone();
            tokio::spawn(
                async move { matches!(gate.turn(&request("SHARED bob", 6)).await, Turn::Go) },
            )
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "bob waits for alice's response");
        writer.begun();
        assert!(waiting.await.unwrap_or(false));
        // Warm now: no waiting, no writing.
        assert!(matches!(
            gate.turn(&request("SHARED carol", 6)).await,
            Turn::Go
        ));
        // Another prefix is written anew; a request without marks is never gated.
        assert!(matches!(
            gate.turn(&request("OTHER! x", 6)).await,
            Turn::Write(_)
        ));
        let mut bare = request("SHARED", 6);
        bare.cache = None;
        assert!(matches!(gate.turn(&bare).await, Turn::Go));
    }

    #[tokio::test]
    async fn a_prefix_unused_past_its_lifetime_is_written_again() {
        let gate = Arc::new(PrefixGate::new(Duration::from_millis(50)));
        let Turn::Write(writer) = gate.turn(&request("SHARED alice", 6)).await else {
            panic!("the first request writes");
        };
        writer.begun();
        assert!(matches!(
            gate.turn(&request("SHARED bob", 6)).await,
            Turn::Go
        ));
        tokio::time::sleep(Duration::from_millis(120)).await;
        // The provider has dropped the entry: the next request writes it, the others wait.
        assert!(matches!(
            gate.turn(&request("SHARED carol", 6)).await,
            Turn::Write(_)
        ));
    }
}
