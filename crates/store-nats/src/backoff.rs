//! Backoff with full jitter for the store's retry loops: after a lost compare-and-set (another
//! writer committed first) or a server that did not answer, the next attempt waits a random
//! time up to a cap that doubles each round, so writers that collided do not collide again in
//! step, and a hot key (the roster, a contended task) is not hammered. The synchronous store
//! traits wait on the calling thread; async callers reach the store off their workers
//! (`troupe_store::blocking`, `off_worker`).

use std::time::Duration;

/// Backoff state of one retry loop.
#[derive(Debug, Clone)]
pub struct Backoff {
    cap: Duration,
    max: Duration,
}

impl Backoff {
    /// For compare-and-set conflicts: the first retry at once-ish (up to 1 ms), capped at
    /// 50 ms.
    pub fn conflicts() -> Backoff {
        Backoff {
            cap: Duration::from_millis(1),
            max: Duration::from_millis(50),
        }
    }

    /// For a server that did not answer: up to 20 ms first, capped at 500 ms.
    pub fn unreachable() -> Backoff {
        Backoff {
            cap: Duration::from_millis(20),
            max: Duration::from_millis(500),
        }
    }

    /// The next pause: uniformly random up to the current cap, which then doubles.
    pub fn next_pause(&mut self) -> Duration {
        let cap_us = u64::try_from(self.cap.as_micros()).unwrap_or(u64::MAX);
        let pause = Duration::from_micros(fastrand::u64(0..=cap_us));
        self.cap = (self.cap * 2).min(self.max);
        pause
    }

    /// Waits the next pause on this thread.
    pub fn wait(&mut self) {
        std::thread::sleep(self.next_pause());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_random_below_a_doubling_cap() {
        let mut b = Backoff::conflicts();
        let mut caps = Vec::new();
        for _ in 0..10 {
            caps.push(b.cap);
            let p = b.next_pause();
            assert!(p <= *caps.last().unwrap_or(&Duration::ZERO));
        }
        assert_eq!(caps[0], Duration::from_millis(1));
        assert_eq!(caps[1], Duration::from_millis(2));
        assert_eq!(
            *caps.last().unwrap_or(&Duration::ZERO),
            Duration::from_millis(50)
        );
    }
}
