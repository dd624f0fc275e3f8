//! A team stuck on a request nobody has answered says so, once per request, after a short
//! while: who waits, for which request, and how to answer it from any terminal
//! (`troupe team approve <id>`), instead of silence until the team timeout.

use std::collections::HashSet;
use std::time::Duration;
use troupe_protocol::{Request, RequestStatus};
use troupe_store::{RequestFilter, TeamStore};

/// How long a request may wait before it is mentioned (`TROUPE_WAIT_NOTICE_MS` overrides).
const DEFAULT_AFTER: Duration = Duration::from_secs(15);

/// Pending requests already mentioned, and how old one must be to be.
pub struct Overdue {
    seen: HashSet<String>,
    after: Duration,
}

impl Default for Overdue {
    fn default() -> Overdue {
        Overdue::new()
    }
}

impl Overdue {
    /// Mentions requests pending longer than the default (or `TROUPE_WAIT_NOTICE_MS`).
    pub fn new() -> Overdue {
        let after = std::env::var("TROUPE_WAIT_NOTICE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(DEFAULT_AFTER, Duration::from_millis);
        Overdue {
            seen: HashSet::new(),
            after,
        }
    }

    /// How often to look.
    pub fn interval(&self) -> Duration {
        (self.after / 3).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// One line for each request pending longer than the limit and not mentioned before.
    pub fn check(&mut self, store: &dyn TeamStore) -> Vec<String> {
        let filter = RequestFilter {
            status: Some(RequestStatus::Pending),
            ..RequestFilter::default()
        };
        let Ok(pending) = store.list_requests(&filter) else {
            return Vec::new();
        };
        let now = troupe_agent::transcript::now_ms();
        let after = u64::try_from(self.after.as_millis()).unwrap_or(u64::MAX);
        pending
            .into_iter()
            .filter(|r| now.saturating_sub(r.created_at) >= after)
            .filter(|r| self.seen.insert(r.id.clone()))
            .map(|r| describe(&r, now))
            .collect()
    }
}

/// `alice has waited 20s for an answer to her plan request 01… (addressed to lead); answer it
/// with: troupe team approve 01… (or reject)`.
fn describe(r: &Request, now: u64) -> String {
    let waited = now.saturating_sub(r.created_at) / 1000;
    format!(
        "{} has waited {waited}s for an answer to {} request {} (addressed to {}); answer it from \
         any terminal: troupe team approve {} [--reason …] or troupe team reject {}",
        crate::render::sanitize::terminal(&r.from),
        r.kind.as_str(),
        r.id,
        crate::render::sanitize::terminal(&r.to),
        r.id,
        r.id
    )
}
