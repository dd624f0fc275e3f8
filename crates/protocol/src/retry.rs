//! The one retry policy of troupe: how many attempts, and how long to wait between them
//! (exponential backoff with jitter, capped). The model client retries provider calls with it,
//! the NATS store its lost compare-and-sets and unanswered requests, the permission approver a
//! request it could not mark expired. It computes pauses only; the caller waits them, on a
//! thread or an async timer as suits it.

use std::time::Duration;

/// How a retry loop retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 means never retry; `u32::MAX` for a loop
    /// that retries until it succeeds).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles for each further one.
    pub base_delay: Duration,
    /// Longest wait between attempts, also the cap on a server's `Retry-After`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// The model client's: 4 attempts, from 500 ms up to 20 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based): the server's `Retry-After`
    /// when it sent one (clamped to `max_delay`), else exponential backoff with jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_delay);
        }
        let doublings = attempt.saturating_sub(1).min(30);
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay);
        // Half fixed, half random: spreads out clients that failed together without ever
        // retrying immediately.
        let half = ceiling / 2;
        let jitter_us = u64::try_from(half.as_micros()).unwrap_or(u64::MAX);
        half + Duration::from_micros(fastrand::u64(0..=jitter_us))
    }

    /// A fresh count of attempts under this policy.
    pub fn backoff(self) -> Backoff {
        Backoff {
            policy: self,
            failed: 0,
        }
    }
}

/// The state of one retry loop: how many attempts have failed so far.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: RetryPolicy,
    failed: u32,
}

impl Backoff {
    /// One more attempt failed: the pause before the next one, or `None` when the policy's
    /// attempts are used up.
    pub fn next_pause(&mut self) -> Option<Duration> {
        self.failed = self.failed.saturating_add(1);
        (self.failed < self.policy.max_attempts).then(|| self.policy.delay(self.failed, None))
    }

    /// How many attempts have failed so far.
    pub fn failures(&self) -> u32 {
        self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stays_under_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        for attempt in 1..=6 {
            let ceiling = (100u64 << (attempt - 1)).min(1000);
            let d = policy.delay(attempt, None).as_millis() as u64;
            assert!(
                d >= ceiling / 2 && d <= ceiling,
                "attempt {attempt}: {d} ms"
            );
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(1000)
        );
    }

    #[test]
    fn a_backoff_gives_up_after_the_policys_attempts() {
        let mut backoff = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        }
        .backoff();
        assert!(backoff.next_pause().is_some());
        assert!(backoff.next_pause().is_some());
        assert_eq!(backoff.next_pause(), None);
        assert_eq!(backoff.failures(), 3);
    }
}
