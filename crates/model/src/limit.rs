//! A bound on concurrent model calls: [`Limited`] wraps one client that every agent of a
//! process shares (one HTTP client, one connection pool), and lets at most N of their calls
//! run at once. The rest wait their turn, first come first served, instead of a thousand
//! teammates opening a thousand connections. The request body is built inside the call, so
//! only the calls that run hold one.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::prefix_gate::{PrefixGate, Turn};
use crate::{Model, ModelError, ModelRequest, ModelResponse, StreamEvent};

/// Model calls one process runs at once unless the setting `max_concurrent_model_calls` says
/// otherwise.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 16;

/// A shared model client whose calls take turns (see the module docs).
pub struct Limited {
    inner: Arc<dyn Model>,
    permits: Semaphore,
    max: usize,
    /// With prompt caching: the first request of a shared prefix goes before the others.
    gate: Option<Arc<PrefixGate>>,
}

impl std::fmt::Debug for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limited")
            .field("provider", &self.inner.provider())
            .field("max", &self.max)
            .finish()
    }
}

impl Limited {
    /// Wraps `inner` so that at most `max` calls (at least one) run at once.
    pub fn new(inner: Arc<dyn Model>, max: usize) -> Limited {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Limited {
            inner,
            permits: Semaphore::new(max),
            max,
            gate: None,
        }
    }

    /// With `cache` on, agents starting at once with the same shared prefix (tools and the
    /// shared part of the system prompt) let the first request go alone until its response
    /// begins, so the others read the prefix it wrote (see `prefix_gate`); a prefix unused for
    /// longer than the cache's lifetime is gated again.
    pub fn with_shared_prefixes(mut self, cache: crate::PromptCache) -> Limited {
        self.gate = cache
            .enabled
            .then(|| Arc::new(PrefixGate::new(cache.ttl.lifetime())));
        self
    }

    /// How many calls may run at once.
    pub fn max(&self) -> usize {
        self.max
    }
}

#[async_trait]
impl Model for Limited {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    async fn preconnect(&self) {
        self.inner.preconnect().await;
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let turn = match &self.gate {
            Some(gate) => gate.turn(request).await,
            None => Turn::Go,
        };
        // The semaphore is never closed; were it, the call would simply run unbounded.
        let _turn = self.permits.acquire().await.ok();
        match turn {
            Turn::Go => self.inner.stream(request, on_event).await,
            Turn::Write(writer) => {
                let mut first = |event: StreamEvent| {
                    if !matches!(event, StreamEvent::Retrying { .. }) {
                        writer.begun();
                    }
                    on_event(event);
                };
                let result = self.inner.stream(request, &mut first).await;
                writer.begun();
                result
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use troupe_protocol::Usage;

    /// Counts how many calls run at once, holding each open for a moment.
    #[derive(Default)]
    struct Counting {
        now: AtomicUsize,
        peak: AtomicUsize,
    }

    #[async_trait]
    impl Model for Counting {
        fn provider(&self) -> &str {
            "counting"
        }
        async fn stream(
            &self,
            _request: &ModelRequest,
            _on_event: &mut (dyn FnMut(StreamEvent) + Send),
        ) -> Result<ModelResponse, ModelError> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            self.now.fetch_sub(1, Ordering::SeqCst);
            Ok(ModelResponse {
                content: Vec::new(),
                stop_reason: crate::StopReason::EndTurn,
                usage: Usage::default(),
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_calls_run_at_once_than_allowed_and_all_complete() {
        let counting = Arc::new(Counting::default());
        let limited = Arc::new(Limited::new(counting.clone(), 3));
        assert_eq!(limited.max(), 3);
        let calls: Vec<_> = (0..40)
            .map(|_| {
                let limited = limited.clone();
                tokio::spawn(async move {
                    let request = ModelRequest {
                        model: "m".into(),
                        system: "".into(),
                        messages: Vec::new(),
                        tools: Vec::new().into(),
                        max_tokens: 1,
                        agent: "a".into(),
                        cache: None,
                    };
                    limited.stream(&request, &mut |_| {}).await.is_ok()
                })
            })
            .collect();
        for call in calls {
            assert!(call.await.unwrap_or(false));
        }
        assert!(counting.peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(Limited::new(counting, 0).max(), 1, "at least one call runs");
    }
}
