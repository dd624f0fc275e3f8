//! Backoff for the store's retry loops, on troupe's one [`RetryPolicy`]: after a lost
//! compare-and-set (another writer committed first) or a server that did not answer, the next
//! attempt waits a random time in the upper half of a cap that doubles each round, so writers
//! that collided do not collide again in step, and a hot key (the roster, a contended task) is
//! not hammered. These loops retry until they succeed (the callers bound them by other means).
//!
//! The pauses are async: every retry loop runs inside its operation's one future on the store's
//! runtime and pauses with `tokio::time::sleep(backoff.next_pause()).await`, holding no thread.
//! The synchronous store traits wait on the calling thread once per operation, for its outcome
//! (async callers reach the store off their workers: `troupe_store::blocking`, `off_worker`).

use std::time::Duration;
use troupe_protocol::RetryPolicy;

/// Backoff state of one retry loop.
#[derive(Debug, Clone)]
pub struct Backoff {
    state: troupe_protocol::Backoff,
    max: Duration,
}

impl Backoff {
    fn of(base: Duration, max: Duration) -> Backoff {
        let policy = RetryPolicy {
            max_attempts: u32::MAX,
            base_delay: base,
            max_delay: max,
        };
        Backoff {
            state: policy.backoff(),
            max,
        }
    }

    /// For compare-and-set conflicts: the first retry at once-ish (up to 1 ms), capped at
    /// 50 ms.
    pub fn conflicts() -> Backoff {
        Backoff::of(Duration::from_millis(1), Duration::from_millis(50))
    }

    /// For a server that did not answer: up to 20 ms first, capped at 500 ms.
    pub fn unreachable() -> Backoff {
        Backoff::of(Duration::from_millis(20), Duration::from_millis(500))
    }

    /// The next pause: random in the upper half of the current cap, which then doubles.
    pub fn next_pause(&mut self) -> Duration {
        self.state.next_pause().unwrap_or(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_stay_below_a_doubling_cap() {
        let mut b = Backoff::conflicts();
        let pauses: Vec<Duration> = (0..10).map(|_| b.next_pause()).collect();
        assert!(pauses[0] <= Duration::from_millis(1), "{pauses:?}");
        assert!(pauses[1] <= Duration::from_millis(2), "{pauses:?}");
        assert!(
            pauses.iter().all(|p| *p <= Duration::from_millis(50)),
            "{pauses:?}"
        );
        assert!(pauses[9] >= Duration::from_millis(25), "{pauses:?}");
    }
}
